// The key material of an authenticated NATS deployment (decentralized JWT auth, which
// nats-server 2.9 supports without auth callout): an operator, a system account, and one
// application account that holds the mesh's streams and every user (services and project
// credentials). Generated once (by `pnpm stack`, the compose init or a test fixture) and kept
// as one JSON file; the api reads it to mint and revoke project credentials.
import { createAccount, createOperator, createUser, fromSeed } from '@nats-io/nkeys';
import { z } from 'zod';

/** The users every deployment has: one per process that talks to NATS, plus an admin. */
export const ServiceUser = {
  api: 'api',
  agentWorker: 'agent-worker',
  skills: 'skills',
  tools: 'tools',
  sandboxReaper: 'sandbox-reaper',
  /** Scripts (migrate, reset-nats) and tests: every subject of the root and the JetStream API. */
  admin: 'admin',
} as const;
export type ServiceUser = (typeof ServiceUser)[keyof typeof ServiceUser];

const seed = (prefix: string) =>
  z.string().regex(new RegExp(`^S${prefix}[A-Z2-7]{56}$`), `an nkey seed starting with S${prefix}`);

export const busKeysSchema = z.strictObject({
  v: z.literal(1),
  operator_seed: seed('O'),
  system_account_seed: seed('A'),
  system_user_seed: seed('U'),
  account_seed: seed('A'),
  /** Signs users (services and project credentials); the account's identity key signs none. */
  account_signing_seed: seed('A'),
  service_user_seeds: z.record(z.string(), seed('U')),
});
export type BusKeys = z.infer<typeof busKeysSchema>;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

export function generateBusKeys(): BusKeys {
  const service_user_seeds: Record<string, string> = {};
  for (const u of Object.values(ServiceUser)) service_user_seeds[u] = text(createUser().getSeed());
  return {
    v: 1,
    operator_seed: text(createOperator().getSeed()),
    system_account_seed: text(createAccount().getSeed()),
    system_user_seed: text(createUser().getSeed()),
    account_seed: text(createAccount().getSeed()),
    account_signing_seed: text(createAccount().getSeed()),
    service_user_seeds,
  };
}

/** Parses a keys file's text; the error names the field, never a seed. */
export function parseBusKeys(json: string): BusKeys {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('NATS keys file is not JSON');
  }
  const parsed = busKeysSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `NATS keys file is invalid at ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? ''}`,
    );
  }
  return parsed.data;
}

export function publicKeyOf(seedText: string): string {
  return fromSeed(new TextEncoder().encode(seedText)).getPublicKey();
}
