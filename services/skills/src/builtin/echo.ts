// builtin.echo: returns its arguments. Health checks, benchmarks and fault tests use it to
// exercise the whole mesh without side effects. Its schema is the catalog's, the one the api
// seeds into every project's registry.
import { EchoArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';

export const echoTool = defineTool({
  name: 'echo',
  description: 'Returns its arguments unchanged.',
  args: EchoArgs,
  timeoutMs: 10_000,
  pure: true,
  handler: (args) => Promise.resolve(args),
});
