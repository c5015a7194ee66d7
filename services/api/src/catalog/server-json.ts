// The MCP Registry's `server.json` (https://static.modelcontextprotocol.io/schemas/.../server.schema.json)
// as far as an import reads it: name, description, version, `remotes` (streamable-http or sse URLs
// with declared headers) and `packages` (an npm package run over stdio, with its arguments and
// environment variables). Fields an import does not use (title, icons, repository, _meta, ...)
// are accepted and ignored, so entries written against a newer schema still import.
import { z } from 'zod';

export const InputFormat = z.enum(['string', 'number', 'boolean', 'filepath']);

const inputFields = {
  description: z.string().max(4096).optional(),
  isRequired: z.boolean().optional(),
  format: InputFormat.optional(),
  value: z.string().max(16_384).optional(),
  isSecret: z.boolean().optional(),
  default: z.string().max(16_384).optional(),
  placeholder: z.string().max(4096).optional(),
  choices: z.array(z.string()).max(256).optional(),
};
const Input = z.looseObject(inputFields);
const InputWithVariables = z.looseObject({
  ...inputFields,
  variables: z.record(z.string().min(1).max(128), Input).optional(),
});
export type ServerJsonInput = z.infer<typeof InputWithVariables>;

const KeyValueInput = InputWithVariables.extend({ name: z.string().min(1).max(256) });
export type KeyValueInput = z.infer<typeof KeyValueInput>;

const PositionalArgument = InputWithVariables.extend({
  type: z.literal('positional'),
  valueHint: z.string().max(256).optional(),
  isRepeated: z.boolean().optional(),
});
const NamedArgument = InputWithVariables.extend({
  type: z.literal('named'),
  name: z.string().min(1).max(256),
  isRepeated: z.boolean().optional(),
});
const Argument = z.discriminatedUnion('type', [PositionalArgument, NamedArgument]);
export type ServerJsonArgument = z.infer<typeof Argument>;

const RemoteTransport = z.looseObject({
  type: z.enum(['streamable-http', 'sse']),
  url: z.string().min(1).max(4096),
  headers: z.array(KeyValueInput).max(64).optional(),
  variables: z.record(z.string().min(1).max(128), Input).optional(),
});
export type ServerJsonRemote = z.infer<typeof RemoteTransport>;

const PackageTransport = z.union([z.looseObject({ type: z.literal('stdio') }), RemoteTransport]);

const Package = z.looseObject({
  registryType: z.string().min(1).max(64),
  registryBaseUrl: z.string().max(2048).optional(),
  identifier: z.string().min(1).max(512),
  version: z
    .string()
    .min(1)
    .max(255)
    .refine((v) => v !== 'latest', 'must be a specific version, not "latest"'),
  fileSha256: z.string().optional(),
  runtimeHint: z.string().max(64).optional(),
  transport: PackageTransport,
  runtimeArguments: z.array(Argument).max(64).optional(),
  packageArguments: z.array(Argument).max(64).optional(),
  environmentVariables: z.array(KeyValueInput).max(64).optional(),
});
export type ServerJsonPackage = z.infer<typeof Package>;

/** `namespace/name` in reverse DNS, as the registry requires. */
export const SERVER_NAME = /^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/;

export const ServerJson = z.looseObject({
  $schema: z.string().optional(),
  name: z
    .string()
    .min(3)
    .max(200)
    .regex(SERVER_NAME, 'must be reverse-DNS with one slash, e.g. io.github.acme/weather'),
  description: z.string().min(1).max(1000),
  version: z.string().min(1).max(255),
  title: z.string().max(200).optional(),
  packages: z.array(Package).max(32).optional(),
  remotes: z.array(RemoteTransport).max(32).optional(),
});
export type ServerJson = z.infer<typeof ServerJson>;

/** The zod issues of a bad entry, as error details show them. */
export function issuesOf(err: z.ZodError): { path: string; message: string }[] {
  return err.issues.slice(0, 20).map((i) => ({
    path: i.path.map(String).join('.') || '(root)',
    message: i.message,
  }));
}
