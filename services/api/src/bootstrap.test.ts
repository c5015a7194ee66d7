// Every tool a new project is seeded with must pass the checks tenants' schemas pass: the api
// validates call arguments against stored schemas with RE2 regexes, so a lookahead in a seeded
// pattern made every skills.run_cmd call through POST /executions and the MCP facade fail.
import { expect, it } from 'vitest';
import { createProjectValidators } from '@toolmesh/json-schema';
import { asDraft2020 } from '@toolmesh/protocol';
import { bootstrapTools } from './bootstrap.ts';

it.each(bootstrapTools().map((t) => [t.name, t.parameters] as const))(
  '%s: its parameters compile on the linear-time engine',
  (name, parameters) => {
    const validators = createProjectValidators({});
    expect(() => validators.get('p', name, asDraft2020(parameters))).not.toThrow();
  },
);

it('skills paths: relative ones pass, escapes and empty segments do not', () => {
  const run = bootstrapTools().find((t) => t.name === 'skills.run_cmd')!;
  const validate = createProjectValidators({}).get('p', 'run', asDraft2020(run.parameters));
  const withOutput = (path: string) =>
    validate({ command: 'true', outputs: [path] }) ? 'ok' : 'refused';
  expect(['out.png', 'a/b.txt', '.hidden', 'a/...'].map(withOutput)).toEqual([
    'ok',
    'ok',
    'ok',
    'ok',
  ]);
  expect(['../x', 'a/../b', '/etc/passwd', 'a//b', 'a/', '..'].map(withOutput)).toEqual(
    Array(6).fill('refused'),
  );
});
