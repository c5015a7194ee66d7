import { describe, expect, it } from 'vitest';
import type { AgentToolRecord, ProfileRecord, ToolRecord } from '@toolmesh/store';
import { allows, buildToolset, functionName, toolNameOf } from './toolset.ts';

const tool = (name: string, over: Partial<ToolRecord> = {}): ToolRecord => ({
  tool_id: name,
  project_id: 'p',
  name,
  target: name.split('.')[0]!,
  description: `${name} does things`,
  category: 'general',
  tags: [],
  parameters: { type: 'object' },
  origin: 'external',
  options: {},
  spec: {},
  annotations: {},
  output_schema: null,
  enabled: true,
  definition_hash: null,
  pending_definition: null,
  version: null,
  deprecated: false,
  deprecation_message: null,
  created_at: new Date(),
  updated_at: new Date(),
  ...over,
});

const profile = (allowed: string[], internal: string[] = []): ProfileRecord => ({
  profile_id: 'x',
  project_id: 'p',
  name: 'prof',
  allowed_tools: allowed,
  allowed_internal_tools: internal,
  model: null,
  system_prompt: '',
  created_at: new Date(),
  updated_at: new Date(),
});

const names = (t: ReturnType<typeof buildToolset>) => t.specs.map((s) => s.function.name);
const project = [
  tool('skills.run_cmd'),
  tool('skills.load'),
  tool('builtin.echo'),
  tool('web.fetch'),
];

describe('the toolset', () => {
  it('matches names and whole targets, nothing else', () => {
    expect(allows(['skills.*'], 'skills.run_cmd')).toBe(true);
    expect(allows(['skills.*'], 'skillsx.run')).toBe(false);
    expect(allows(['builtin.echo'], 'builtin.echo')).toBe(true);
    expect(allows(['builtin.echo'], 'builtin.sleep')).toBe(false);
    expect(allows([], 'builtin.echo')).toBe(false);
  });

  it('shows the tools the profile allows, as function names without dots', () => {
    const t = buildToolset(profile(['skills.*', 'web.fetch'], ['submit_result']), project, []);
    expect(names(t)).toEqual(['skills__run_cmd', 'skills__load', 'web__fetch', 'submit_result']);
    expect(t.byFunction.get('skills__run_cmd')?.name).toBe('skills.run_cmd');
    expect(t.skills).toBe(true);
    expect(functionName('a.b')).toBe('a__b');
    expect(toolNameOf('a__b')).toBe('a.b');
  });

  it("narrows to the agent's attached tools when it has any, and drops disabled tools", () => {
    const attached = [{ name: 'web.fetch' } as AgentToolRecord];
    const t = buildToolset(profile(['skills.*', 'web.*']), project, attached);
    expect(names(t)).toEqual(['web__fetch']);
    expect(t.skills).toBe(false);
    const off = buildToolset(profile(['web.*']), [tool('web.fetch', { enabled: false })], []);
    expect(names(off)).toEqual([]);
  });

  it('offers nothing without a profile, and submit_result only when allowed', () => {
    expect(names(buildToolset(undefined, project, []))).toEqual([]);
    expect(names(buildToolset(profile(['builtin.echo']), project, []))).toEqual(['builtin__echo']);
  });
});
