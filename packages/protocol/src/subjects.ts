// The v1 subject grammar, built and parsed in one place:
//   <root>.v1.<project>.<channel>.<kind>.<component>.<target>.<suffix...>
// `cmd` and `evt` subjects are stored in the two JetStream streams; `ctl` subjects are core NATS
// request/reply only and must stay outside every stream (a stream would answer a request to a
// subject it captures with its own publish ack).
// `root` is `cg` on the wire; a deployment (or a test run) may pick another root to keep its
// streams apart from others sharing the same NATS server, since JetStream forbids two streams
// with overlapping subjects.
import { ProtocolError } from './errors.ts';
import { assertId, IdKind, ID_PATTERN } from './ids.ts';

export const PROTOCOL_VERSION = 'v1';
export const DEFAULT_ROOT = 'cg';

export const Kind = { cmd: 'cmd', evt: 'evt', str: 'str', ctl: 'ctl' } as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

export const AgentEvent = { task: 'task', step: 'step', state: 'state' } as const;
export type AgentEvent = (typeof AgentEvent)[keyof typeof AgentEvent];

export interface Scope {
  project: string;
  channel: string;
}

export type ParsedSubject =
  | ({ kind: 'cmd'; component: 'tool'; target: string; tool: string } & Scope)
  | ({ kind: 'cmd'; component: 'agent'; agent: string; action: 'wakeup' } & Scope)
  | ({ kind: 'cmd'; component: 'sys'; action: 'cancel' } & Scope)
  | ({ kind: 'evt'; component: 'tool'; target: string; event: 'result' } & Scope)
  | ({ kind: 'evt'; component: 'tool'; target: string; event: 'progress' } & Scope)
  | ({ kind: 'ctl'; component: 'task'; target: string; action: 'cancel' } & Scope)
  | ({
      kind: 'ctl';
      component: 'mcp';
      server: string;
      action: 'refresh' | 'rpc' | 'notify';
    } & Scope)
  | ({ kind: 'evt'; component: 'agent'; agent: string; event: AgentEvent } & Scope)
  | ({ kind: 'str'; component: 'agent'; agent: string; stream: 'chunk' } & Scope)
  | ({ kind: 'evt'; component: 'sys'; event: 'registry_changed' } & Scope)
  | ({ kind: 'evt'; component: 'sys'; event: 'key_revoked' } & Scope);

/** The channel of project-wide system events (registry changes): not a conversation. */
export const SYSTEM_CHANNEL = 'sys';

export interface Subjects {
  readonly root: string;
  toolCall(s: Scope & { target: string; tool: string }): string;
  toolResult(s: Scope & { target: string }): string;
  agentWakeup(s: Scope & { agent: string }): string;
  agentEvent(s: Scope & { agent: string; event: AgentEvent }): string;
  agentChunk(s: Scope & { agent: string }): string;
  cancel(s: Scope): string;
  /** Progress of a running call (watch heartbeats): events beside the result, never in its slot. */
  toolProgress(s: Scope & { target: string }): string;
  /** Cancel of an async task of a target: a core NATS request the owning instance answers. */
  taskCancel(s: Scope & { target: string }): string;
  /** Every task cancel of a target (of every target, without one) across projects and
   *  channels (each instance subscribes to its own target's). */
  taskCancelFilter(target?: string): string;
  /**
   * Every tool call for a target, across channels of one project (a consumer filter on the
   * project's command stream) or, without a project, of every project.
   */
  toolCallFilter(target: string, project?: string): string;
  /**
   * `<root>.v1.<project>.<channel>.ctl.mcp.<server>.refresh`: discover an MCP server's tools; a
   * core NATS request one tools-service instance (queue group) answers.
   */
  mcpRefresh(s: Scope & { server: string }): string;
  /** Every MCP refresh request across projects and channels (the tools service's queue group). */
  mcpRefreshFilter(): string;
  /**
   * `<root>.v1.<project>.<channel>.ctl.mcp.<server>.rpc`: one passed-through request to an MCP
   * server (resources, prompts, completion, logging); a core NATS request one tools-service
   * instance (queue group) answers over its pooled connection.
   */
  mcpRpc(s: Scope & { server: string }): string;
  /** Every MCP passthrough request across projects and channels. */
  mcpRpcFilter(): string;
  /** Every request an MCP server asks of a call's client, across projects and channels. */
  mcpAskFilter(): string;
  /** What every project's MCP servers notify (the api's sessions; the tools services publish). */
  allMcpNotifyFilter(): string;
  /** Every project's answered input requests (the tools services wait for them). */
  inputAnsweredFilter(): string;
  /**
   * `<root>.v1.<project>.sys.ctl.mcp.<server>.notify`: a notification an MCP server sent on a
   * pooled connection (resource updated, list changed, log message), published by the tools
   * service for the api's sessions of that project (core NATS, outside every stream).
   */
  mcpNotify(s: { project: string; server: string }): string;
  /** The notifications of every MCP server of one project. */
  mcpNotifyFilter(project: string): string;
  /**
   * `<root>.v1.<project>.<channel>.ctl.ask.<tool_call_id>.request`: the MCP server running a
   * call asks its client (sampling, elicitation); the api instance waiting for the call answers.
   */
  mcpAsk(s: Scope & { toolCallId: string }): string;
  /**
   * `<root>.v1.<project>.<channel>.ctl.input.<input_request_id>.answered`: an input request of a
   * call was answered (in Postgres); the tools service waiting for it reads the answer. Carries
   * nothing: a lost or forged one only makes that service read the row.
   */
  inputAnswered(s: Scope & { inputRequestId: string }): string;
  /** Every tool call of every target (a registry tool service's consumer filter), of one project
   *  or, without one, of every project. */
  allToolCallsFilter(project?: string): string;
  /** `<root>.v1.<project>.sys.evt.sys.registry.changed`: tools of the project changed. */
  registryChanged(project: string): string;
  /** Every registry change of every project (each tool-service instance subscribes). */
  registryChangedFilter(): string;
  /** `<root>.v1.<project>.sys.evt.sys.key.revoked`: an API key of the project was revoked. */
  keyRevoked(project: string): string;
  /** Every key revocation of every project (each api instance drops its cached key). */
  keyRevokedFilter(): string;
  /** Every cancel request across channels of one project, or of every project without one. */
  cancelFilter(project?: string): string;
  /** Every agent wakeup across channels (the agent workers' consumer filter), of one project or,
   *  without one, of every project. */
  agentWakeupFilter(project?: string): string;
  /** Every result event of a target in one project and channel. */
  toolResultFilter(s: Scope): string;
  /** Every event (`evt`) and stream chunk (`str`) of one project, all channels: what a watch sees. */
  projectActivityFilters(project: string): string[];
  /**
   * Every tool call of one project, all channels and targets: the live feed's filter on the
   * command stream (a consumer filter, never a core subscription: the api may not subscribe to
   * `cmd` subjects).
   */
  projectToolCallsFilter(project: string): string;
  /** Subjects of one project's command stream (`Names.projectCommandStream`). */
  projectCommandStreamSubjects(project: string): string[];
  /** Every command subject of every project (what the project command streams together hold). */
  allCommandsFilter(): string;
  /** Subject filters of the event stream. */
  eventStreamSubjects(): string[];
  /** Every result and progress event of every tool, project and channel. */
  toolEventsFilter(): string;
  /** Agent facts of one kind (every kind, without one), of every project and channel. */
  agentEventFilter(event?: AgentEvent): string;
  /** Every agent's stream chunks, of every project and channel. */
  agentChunkFilter(): string;
  /** Every event (`evt`) of every project and channel. */
  allEventsFilter(): string;
  /** Every lossy stream chunk (`str`) of every project and channel. */
  allStreamsFilter(): string;
  /** Every core request (`ctl`) of every project and channel. */
  allControlFilter(): string;
  /** Everything under this root (an operator's reach). */
  rootFilter(): string;
  /** Parses a subject of this root; throws `invalid_id` or `invalid_message` naming the problem. */
  parse(subject: string): ParsedSubject;
}

function scoped(root: string, s: Scope, ...rest: string[]): string {
  assertId(IdKind.project, s.project);
  assertId(IdKind.channel, s.channel);
  return [root, PROTOCOL_VERSION, s.project, s.channel, ...rest].join('.');
}

/** The root names streams, buckets and consumers too, so it must be one plain token. */
export function assertRoot(root: string): string {
  if (!ID_PATTERN.test(root)) {
    const message = `subject root ${JSON.stringify(root)} is not a valid token`;
    throw new ProtocolError('invalid_id', message, { details: { field: 'root' } });
  }
  return root;
}

export function createSubjects(root: string = DEFAULT_ROOT): Subjects {
  assertRoot(root);
  const prefix = `${root}.${PROTOCOL_VERSION}.`;
  return {
    root,
    toolCall: (s) =>
      scoped(
        root,
        s,
        'cmd',
        'tool',
        assertId(IdKind.target, s.target),
        assertId(IdKind.tool, s.tool),
      ),
    toolResult: (s) => scoped(root, s, 'evt', 'tool', assertId(IdKind.target, s.target), 'result'),
    agentWakeup: (s) => scoped(root, s, 'cmd', 'agent', assertId(IdKind.agent, s.agent), 'wakeup'),
    agentEvent: (s) => scoped(root, s, 'evt', 'agent', assertId(IdKind.agent, s.agent), s.event),
    agentChunk: (s) => scoped(root, s, 'str', 'agent', assertId(IdKind.agent, s.agent), 'chunk'),
    cancel: (s) => scoped(root, s, 'cmd', 'sys', 'cancel'),
    toolProgress: (s) =>
      scoped(root, s, 'evt', 'tool', assertId(IdKind.target, s.target), 'progress'),
    taskCancel: (s) => scoped(root, s, 'ctl', 'task', assertId(IdKind.target, s.target), 'cancel'),
    taskCancelFilter: (target) =>
      `${prefix}*.*.ctl.task.${target === undefined ? '*' : assertId(IdKind.target, target)}.cancel`,
    toolCallFilter: (target, project) =>
      `${prefix}${projectToken(project)}.*.cmd.tool.${assertId(IdKind.target, target)}.>`,
    mcpRefresh: (s) => scoped(root, s, 'ctl', 'mcp', assertId(IdKind.target, s.server), 'refresh'),
    mcpRefreshFilter: () => `${prefix}*.*.ctl.mcp.*.refresh`,
    mcpRpc: (s) => scoped(root, s, 'ctl', 'mcp', assertId(IdKind.target, s.server), 'rpc'),
    mcpRpcFilter: () => `${prefix}*.*.ctl.mcp.*.rpc`,
    mcpNotify: (s) =>
      scoped(
        root,
        { project: s.project, channel: SYSTEM_CHANNEL },
        'ctl',
        'mcp',
        assertId(IdKind.target, s.server),
        'notify',
      ),
    mcpNotifyFilter: (project) =>
      `${prefix}${assertId(IdKind.project, project)}.${SYSTEM_CHANNEL}.ctl.mcp.*.notify`,
    mcpAskFilter: () => `${prefix}*.*.ctl.ask.*.request`,
    allMcpNotifyFilter: () => `${prefix}*.${SYSTEM_CHANNEL}.ctl.mcp.*.notify`,
    inputAnsweredFilter: () => `${prefix}*.*.ctl.input.*.answered`,
    mcpAsk: (s) =>
      scoped(root, s, 'ctl', 'ask', assertId(IdKind.toolCall, s.toolCallId), 'request'),
    inputAnswered: (s) =>
      scoped(root, s, 'ctl', 'input', assertId(IdKind.toolCall, s.inputRequestId), 'answered'),
    allToolCallsFilter: (project) => `${prefix}${projectToken(project)}.*.cmd.tool.>`,
    registryChanged: (project) =>
      scoped(root, { project, channel: SYSTEM_CHANNEL }, 'evt', 'sys', 'registry', 'changed'),
    registryChangedFilter: () => `${prefix}*.${SYSTEM_CHANNEL}.evt.sys.registry.changed`,
    keyRevoked: (project) =>
      scoped(root, { project, channel: SYSTEM_CHANNEL }, 'evt', 'sys', 'key', 'revoked'),
    keyRevokedFilter: () => `${prefix}*.${SYSTEM_CHANNEL}.evt.sys.key.revoked`,
    cancelFilter: (project) => `${prefix}${projectToken(project)}.*.cmd.sys.cancel`,
    agentWakeupFilter: (project) => `${prefix}${projectToken(project)}.*.cmd.agent.*.wakeup`,
    toolResultFilter: (s) => scoped(root, s, 'evt', 'tool', '*', 'result'),
    projectActivityFilters: (project) => {
      const p = assertId(IdKind.project, project);
      return [`${prefix}${p}.*.evt.>`, `${prefix}${p}.*.str.>`];
    },
    projectToolCallsFilter: (project) =>
      `${prefix}${assertId(IdKind.project, project)}.*.cmd.tool.>`,
    projectCommandStreamSubjects: (project) => [
      `${prefix}${assertId(IdKind.project, project)}.*.cmd.>`,
    ],
    allCommandsFilter: () => `${prefix}*.*.cmd.>`,
    eventStreamSubjects: () => [`${prefix}*.*.evt.>`],
    toolEventsFilter: () => `${prefix}*.*.evt.tool.>`,
    agentEventFilter: (event) =>
      `${prefix}*.*.evt.agent.${event === undefined ? '>' : `*.${event}`}`,
    agentChunkFilter: () => `${prefix}*.*.str.agent.>`,
    allEventsFilter: () => `${prefix}*.*.evt.>`,
    allStreamsFilter: () => `${prefix}*.*.str.>`,
    allControlFilter: () => `${prefix}*.*.ctl.>`,
    rootFilter: () => `${root}.>`,
    parse: (subject) => parseSubject(root, subject),
  };
}

/** A project's token in a filter, or the wildcard for every project. */
function projectToken(project: string | undefined): string {
  return project === undefined ? '*' : assertId(IdKind.project, project);
}

function bad(subject: string, why: string): ProtocolError {
  return new ProtocolError('invalid_message', `subject ${JSON.stringify(subject)}: ${why}`, {
    details: { subject },
  });
}

function parseSubject(root: string, subject: string): ParsedSubject {
  const t = subject.split('.');
  if (t[0] !== root || t[1] !== PROTOCOL_VERSION)
    throw bad(subject, `expected ${root}.${PROTOCOL_VERSION}.*`);
  if (t.length < 7) throw bad(subject, 'too few tokens');
  const [, , project, channel, kind, component, target, ...suffix] = t as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    ...string[],
  ];
  const scope: Scope = {
    project: assertId(IdKind.project, project),
    channel: assertId(IdKind.channel, channel),
  };
  const one = suffix.length === 1 ? suffix[0] : undefined;
  if (kind === 'cmd' && component === 'tool' && one !== undefined) {
    return {
      kind,
      component,
      ...scope,
      target: assertId(IdKind.target, target),
      tool: assertId(IdKind.tool, one),
    };
  }
  if (kind === 'cmd' && component === 'agent' && one === 'wakeup') {
    return { kind, component, ...scope, agent: assertId(IdKind.agent, target), action: one };
  }
  if (kind === 'cmd' && component === 'sys' && target === 'cancel' && suffix.length === 0) {
    return { kind, component, ...scope, action: 'cancel' };
  }
  if (kind === 'evt' && component === 'tool' && one === 'result') {
    return { kind, component, ...scope, target: assertId(IdKind.target, target), event: one };
  }
  if (kind === 'evt' && component === 'tool' && one === 'progress') {
    return { kind, component, ...scope, target: assertId(IdKind.target, target), event: one };
  }
  if (kind === 'ctl' && component === 'task' && one === 'cancel') {
    return { kind, component, ...scope, target: assertId(IdKind.target, target), action: one };
  }
  if (
    kind === 'ctl' &&
    component === 'mcp' &&
    (one === 'refresh' || one === 'rpc' || one === 'notify')
  ) {
    return { kind, component, ...scope, server: assertId(IdKind.target, target), action: one };
  }
  if (
    kind === 'evt' &&
    component === 'agent' &&
    (one === 'task' || one === 'step' || one === 'state')
  ) {
    return { kind, component, ...scope, agent: assertId(IdKind.agent, target), event: one };
  }
  if (kind === 'evt' && component === 'sys' && target === 'registry' && one === 'changed') {
    return { kind, component, ...scope, event: 'registry_changed' };
  }
  if (kind === 'evt' && component === 'sys' && target === 'key' && one === 'revoked') {
    return { kind, component, ...scope, event: 'key_revoked' };
  }
  if (kind === 'str' && component === 'agent' && one === 'chunk') {
    return { kind, component, ...scope, agent: assertId(IdKind.agent, target), stream: one };
  }
  throw bad(subject, 'not a v1 subject this protocol defines');
}

/** Splits a full tool name `<target>.<tool>` (e.g. `skills.run_cmd`). */
export function splitToolName(name: string): { target: string; tool: string } {
  const dot = name.indexOf('.');
  const target = dot > 0 ? name.slice(0, dot) : '';
  const tool = dot > 0 ? name.slice(dot + 1) : '';
  return { target: assertId(IdKind.target, target), tool: assertId(IdKind.tool, tool) };
}

export function joinToolName(target: string, tool: string): string {
  return `${assertId(IdKind.target, target)}.${assertId(IdKind.tool, tool)}`;
}
