import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  builtinTools,
  catalogTool,
  isReservedToolName,
  skillsTools,
  TOOL_CATALOG,
} from './catalog.ts';
import { RunCmdArgs, RunServiceArgs, StartJobArgs } from './catalog-args.ts';
import { isErrorCode } from '@toolmesh/protocol';

const SKILLS = [
  'load',
  'activate',
  'run_cmd',
  'run_cmd_async',
  'run_service',
  'start_job',
  'job_status',
  'job_watch',
  'job_cancel',
  'task_status',
  'task_watch',
  'task_cancel',
];

describe('tool catalog', () => {
  it('holds the twelve skills tools and the eight builtin tools', () => {
    expect(skillsTools().map((t) => t.name)).toEqual(SKILLS.map((t) => `skills.${t}`));
    expect(builtinTools().map((t) => t.name)).toEqual([
      'builtin.echo',
      'builtin.sleep',
      'builtin.execute_python',
      'builtin.read_file',
      'builtin.write_file',
      'builtin.list_files',
      'builtin.search_documents',
      'builtin.get_document',
    ]);
    expect(TOOL_CATALOG).toHaveLength(20);
  });

  it('has unique, reserved names that split into target and tool', () => {
    const names = TOOL_CATALOG.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const tool of TOOL_CATALOG) {
      expect(tool.name).toBe(`${tool.target}.${tool.tool}`);
      expect(tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_-]{1,64}$/);
      expect(isReservedToolName(tool.name)).toBe(true);
      expect(tool.description.length).toBeGreaterThan(20);
      expect(catalogTool(tool.name)).toBe(tool);
    }
  });

  it('gives every tool a valid draft 2020-12 object schema', () => {
    const ajv = new Ajv2020({ strict: false });
    for (const tool of TOOL_CATALOG) {
      expect(tool.parameters['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(tool.parameters['type']).toBe('object');
      expect(ajv.validateSchema(tool.parameters), `${tool.name}: ${ajv.errorsText()}`).toBe(true);
      expect(() => ajv.compile(tool.parameters), tool.name).not.toThrow();
    }
  });

  it('makes the skills tools strict objects with bounded strings and arrays', () => {
    for (const tool of skillsTools()) {
      expect(tool.parameters['additionalProperties'], tool.name).toBe(false);
      const walk = (schema: unknown, path: string): void => {
        if (typeof schema !== 'object' || schema === null) return;
        const s = schema as Record<string, unknown>;
        if (s['type'] === 'string') {
          expect(s['maxLength'] ?? s['pattern'] ?? s['enum'], path).toBeDefined();
        }
        if (s['type'] === 'array') expect(s['maxItems'], path).toBeDefined();
        for (const [k, v] of Object.entries(s)) walk(v, `${path}.${k}`);
      };
      walk(tool.parameters, tool.name);
    }
  });

  it('agrees with ajv on what the zod schemas accept', () => {
    const ajv = new Ajv2020({ strict: false });
    const runCmd = ajv.compile(catalogTool('skills.run_cmd')?.parameters ?? {});
    const good = {
      skill: 'demo-skill',
      command: 'python draw.py --out out.png',
      env: { COLOR: 'red; rm -rf / $(whoami)', _X1: '' },
      session_id: 'sess-1',
      timeout_ms: 30_000,
      inputs: [{ artifact_id: 'art_1', path: 'in/data.csv' }],
      outputs: ['out.png', 'reports/summary.txt'],
      workdir: 'skill',
    };
    expect(RunCmdArgs.safeParse(good).success).toBe(true);
    expect(runCmd(good)).toBe(true);
    const bad = [
      { command: '' },
      { command: 'x'.repeat(16 * 1024 + 1) },
      { command: 'ls', extra: 1 },
      { command: 'ls', env: { '1BAD': 'x' } },
      { command: 'ls', env: { 'A-B': 'x' } },
      { command: 'ls', outputs: ['../escape.txt'] },
      { command: 'ls', outputs: ['/etc/passwd'] },
      { command: 'ls', outputs: ['a/../../b'] },
      { command: 'ls', outputs: ['a\\b'] },
      { command: 'ls', outputs: ['dir/'] },
      { command: 'ls', workdir: '..' },
      { command: 'ls', inputs: [{ artifact_id: 'a', path: 'x', extra: true }] },
      { command: 'ls', session_id: 'a.b' },
      { command: 'ls', timeout_ms: 0 },
      { command: 'ls', timeout_ms: 1.5 },
      { command: 'ls', skill: 'bad name' },
    ];
    for (const args of bad) {
      expect(RunCmdArgs.safeParse(args).success, JSON.stringify(args)).toBe(false);
      expect(runCmd(args), JSON.stringify(args)).toBe(false);
    }
    // Path rules allow what is harmless.
    for (const path of ['a..b', 'a/..b/c', './out.png', 'my dir/ünïcode.txt']) {
      expect(RunCmdArgs.safeParse({ command: 'ls', outputs: [path] }).success, path).toBe(true);
    }
  });

  it('checks run_service ports and session, start_job steps, and the builtins', () => {
    const service = { command: 'npm run dev', session_id: 's1', expose_ports: [3000] };
    expect(RunServiceArgs.safeParse(service).success).toBe(true);
    expect(RunServiceArgs.safeParse({ ...service, expose_ports: [0] }).success).toBe(false);
    expect(RunServiceArgs.safeParse({ ...service, expose_ports: [65536] }).success).toBe(false);
    expect(RunServiceArgs.safeParse({ ...service, expose_ports: [80, 80] }).success).toBe(false);
    expect(RunServiceArgs.safeParse({ command: 'x' }).success).toBe(false);
    const ports = catalogTool('skills.run_service')?.parameters['properties'] as Record<
      string,
      Record<string, unknown>
    >;
    expect(ports['expose_ports']).toMatchObject({ uniqueItems: true, maxItems: 8 });
    expect(ports['env']).toMatchObject({ maxProperties: 64 });

    const step = { command: 'pip install -r requirements.txt', timeout_ms: 60_000 };
    expect(StartJobArgs.safeParse({ steps: [step] }).success).toBe(true);
    expect(StartJobArgs.safeParse({ steps: [] }).success).toBe(false);
    expect(StartJobArgs.safeParse({ steps: Array(21).fill(step) }).success).toBe(false);

    const sleep = catalogTool('builtin.sleep');
    expect(sleep?.args.safeParse({ ms: 10 }).success).toBe(true);
    expect(sleep?.args.safeParse({ ms: 3_600_001 }).success).toBe(false);
    expect(sleep?.args.safeParse({ ms: 10, extra: 1 }).success).toBe(false);
    expect(catalogTool('builtin.echo')?.args.safeParse({ any: { thing: [1] } }).success).toBe(true);
  });

  it('reserves skills.* and builtin.* only', () => {
    for (const name of [
      'skills.run_cmd',
      'skills.anything',
      'builtin.echo',
      'Skills.x',
      'BUILTIN.y',
    ]) {
      expect(isReservedToolName(name), name).toBe(true);
    }
    for (const name of ['weather.get', 'skillsx.run', 'my_skills.run', 'builtins.echo']) {
      expect(isReservedToolName(name), name).toBe(false);
    }
  });

  it('describes every result field, with every object of a result closed to other fields', () => {
    const open: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (typeof node !== 'object' || node === null) return;
      const n = node as Record<string, unknown>;
      if (n['properties']) {
        if (n['additionalProperties'] !== false) open.push(path);
        for (const [k, v] of Object.entries(n['properties'])) {
          if (!(v as { description?: string }).description && !(v as { anyOf?: unknown }).anyOf)
            open.push(`${path}.${k} (no description)`);
          walk(v, `${path}.${k}`);
        }
      }
      for (const key of ['items', 'anyOf', 'oneOf']) {
        const sub = n[key];
        for (const s of Array.isArray(sub) ? sub : [sub]) walk(s, `${path}[${key}]`);
      }
    };
    for (const t of TOOL_CATALOG) walk(t.resultSchema, t.name);
    expect(open).toEqual([]);
  });

  it("files only codes of the protocol's catalog, each with when", () => {
    for (const t of TOOL_CATALOG) {
      for (const e of t.errors) {
        expect(isErrorCode(e.code), `${t.name}: ${e.code}`).toBe(true);
        expect(e.when.length, `${t.name}: ${e.code}`).toBeGreaterThan(10);
      }
    }
  });
});
