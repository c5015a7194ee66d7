// What an agent may call: the project's enabled tools that the profile's `allowed_tools` admits
// (a name, or `<target>.*`) and, when the agent has tools attached, only those; plus the
// internal tools its profile lists. Function names cannot hold a dot, so `skills.run_cmd` is
// shown to the model as `skills__run_cmd`, and mapped back through this table (never by
// parsing, so a name the model invents cannot reach a tool it was not allowed).
//
// An attached tool's `config` is merged over the model's arguments: its keys are fixed by the
// agent's owner, so they are taken out of the schema the model is shown and win over anything
// the model sends under the same names. Agents with more tools than `agent.prompt_tools_max`
// are shown that many in full plus `list_available_tools`, through which the model finds the
// rest; every allowed tool can be called, shown or found. The config's `approval` and
// `approval_timeout_ms` are not arguments: the tool services read them (a call waits for a
// person), so they are left out of what is merged.
import type { AgentToolRecord, ProfileRecord, ToolRecord } from '@toolmesh/store';
import type { FunctionSpec } from './llm.ts';
import { SUBMIT_RESULT } from './submit.ts';

export { SUBMIT_RESULT };
export const LIST_AVAILABLE_TOOLS = 'list_available_tools';

export interface Toolset {
  specs: FunctionSpec[];
  /** Function name -> registry tool, for every tool the agent may call. */
  byFunction: Map<string, ToolRecord>;
  /** Tool name -> the attached tool's config (keys the model cannot set). */
  config: Map<string, Record<string, unknown>>;
  /** Internal tools this agent may use. */
  internal: Set<string>;
  /** Whether any skills.* tool is visible (the prompt then lists the skills). */
  skills: boolean;
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const functionName = (toolName: string): string => toolName.replace('.', '__');
/** The tool name a function name stands for, for messages about names outside the table. */
export const toolNameOf = (fn: string): string => (fn.includes('.') ? fn : fn.replace('__', '.'));

export function allows(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) =>
    p.endsWith('.*') ? name.startsWith(p.slice(0, -1)) && name.length > p.length - 1 : p === name,
  );
}

const submitSpec: FunctionSpec = {
  type: 'function',
  function: {
    name: SUBMIT_RESULT,
    description:
      'Finish the task: give the final answer. Call it once, when the work is done. Other calls in the same answer still run and are recorded, but you will not see their results: the task ends with this answer.',
    parameters: {
      type: 'object',
      properties: {
        result: { description: 'the final answer: text, or any JSON value the task asked for' },
      },
      required: ['result'],
      additionalProperties: false,
    },
  },
};

const listSpec: FunctionSpec = {
  type: 'function',
  function: {
    name: LIST_AVAILABLE_TOOLS,
    description:
      'List tools you may call beyond those offered here, with their parameters. Any tool listed can be called by its function name.',
    parameters: {
      type: 'object',
      properties: {
        category: { type: 'string', description: 'only tools of this category' },
        query: { type: 'string', description: 'only tools whose name or description holds this' },
      },
      additionalProperties: false,
    },
  },
};

/** An attached tool's config minus the keys the tool services read (approval settings). */
function withoutApprovalKeys(config: Record<string, unknown> | undefined): Record<string, unknown> {
  if (config === undefined) return {};
  if (!('approval' in config) && !('approval_timeout_ms' in config)) return config;
  const { approval: _a, approval_timeout_ms: _t, ...rest } = config;
  return rest;
}

/** The parameters schema without the keys the agent's config fixes. */
export function withoutFixed(
  parameters: Record<string, unknown>,
  fixed: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const keys = Object.keys(fixed ?? {});
  if (keys.length === 0) return parameters;
  const props = parameters['properties'];
  const required = parameters['required'];
  const out: Record<string, unknown> = { ...parameters };
  if (typeof props === 'object' && props !== null)
    out['properties'] = Object.fromEntries(
      Object.entries(props).filter(([k]) => !keys.includes(k)),
    );
  if (Array.isArray(required))
    out['required'] = (required as unknown[]).filter(
      (k) => typeof k !== 'string' || !keys.includes(k),
    );
  return out;
}

export function specOf(t: ToolRecord, fixed: Record<string, unknown> | undefined): FunctionSpec {
  return {
    type: 'function',
    function: {
      name: functionName(t.name),
      description: t.description,
      parameters: withoutFixed(t.parameters, fixed),
    },
  };
}

export function buildToolset(
  profile: ProfileRecord | undefined,
  projectTools: ToolRecord[],
  attached: AgentToolRecord[],
  promptToolsMax = Number.POSITIVE_INFINITY,
): Toolset {
  const allowed = profile?.allowed_tools ?? [];
  const config = new Map(attached.map((t) => [t.name, withoutApprovalKeys(t.config)]));
  const byFunction = new Map<string, ToolRecord>();
  for (const t of projectTools) {
    if (!t.enabled || !allows(allowed, t.name)) continue;
    if (config.size > 0 && !config.has(t.name)) continue;
    const fn = functionName(t.name);
    if (!FUNCTION_NAME.test(fn)) continue;
    byFunction.set(fn, t);
  }
  const internal = new Set(profile?.allowed_internal_tools ?? []);
  const all = [...byFunction.values()];
  const specs = all.slice(0, promptToolsMax).map((t) => specOf(t, config.get(t.name)));
  // Discovery is offered whenever some tools are not shown; a profile may also list it.
  if (all.length > specs.length || internal.has(LIST_AVAILABLE_TOOLS)) {
    internal.add(LIST_AVAILABLE_TOOLS);
    specs.push(listSpec);
  }
  if (internal.has(SUBMIT_RESULT)) specs.push(submitSpec);
  const skills = all.some((t) => t.name.startsWith('skills.'));
  return { specs, byFunction, config, internal, skills };
}

/** The answer to a list_available_tools call: the tools not shown, filtered as asked. */
export function listAvailable(
  tools: Toolset,
  args: Record<string, unknown>,
): { tools: { name: string; description: string; category: string; parameters: unknown }[] } {
  const shown = new Set(tools.specs.map((s) => s.function.name));
  const category = typeof args['category'] === 'string' ? args['category'] : undefined;
  const query = typeof args['query'] === 'string' ? args['query'].toLowerCase() : undefined;
  const out = [];
  for (const [fn, t] of tools.byFunction) {
    if (shown.has(fn)) continue;
    if (category !== undefined && t.category !== category) continue;
    if (query && !`${t.name} ${t.description}`.toLowerCase().includes(query)) continue;
    const spec = specOf(t, tools.config.get(t.name)).function;
    out.push({
      name: spec.name,
      description: spec.description ?? '',
      category: t.category,
      parameters: spec.parameters,
    });
  }
  return { tools: out };
}
