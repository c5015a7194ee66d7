// builtin.echo: returns its arguments. Health checks, benchmarks and fault tests use it to
// exercise the whole mesh without side effects.
import { z } from 'zod';
import { defineTool } from '@toolmesh/tool-service';

export const echoTool = defineTool({
  name: 'echo',
  description: 'Returns its arguments unchanged.',
  args: z.record(z.string(), z.unknown()),
  timeoutMs: 10_000,
  handler: (args) => Promise.resolve(args),
});
