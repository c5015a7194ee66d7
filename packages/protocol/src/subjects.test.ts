import { describe, expect, it } from 'vitest';
import { ProtocolError } from './errors.ts';
import { createSubjects, joinToolName, splitToolName, type ParsedSubject } from './subjects.ts';

const subjects = createSubjects('cg');
const scope = { project: 'proj_1', channel: 'main-chan' };

/** NATS subject matching: `*` matches one token, a trailing `>` one or more. */
function matches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

/** Runs `fn`, expecting a ProtocolError, and returns it for further checks. */
function protocolError(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }
  throw new Error('expected a ProtocolError, nothing was thrown');
}

describe('subject builders', () => {
  const cases: Array<{ name: string; subject: string; parsed: ParsedSubject }> = [
    {
      name: 'tool call',
      subject: subjects.toolCall({ ...scope, target: 'skills', tool: 'run_cmd' }),
      parsed: { kind: 'cmd', component: 'tool', ...scope, target: 'skills', tool: 'run_cmd' },
    },
    {
      name: 'tool result',
      subject: subjects.toolResult({ ...scope, target: 'skills' }),
      parsed: { kind: 'evt', component: 'tool', ...scope, target: 'skills', event: 'result' },
    },
    {
      name: 'agent wakeup',
      subject: subjects.agentWakeup({ ...scope, agent: 'agent-7' }),
      parsed: { kind: 'cmd', component: 'agent', ...scope, agent: 'agent-7', action: 'wakeup' },
    },
    ...(['task', 'step', 'state'] as const).map((event) => ({
      name: `agent ${event} event`,
      subject: subjects.agentEvent({ ...scope, agent: 'agent-7', event }),
      parsed: {
        kind: 'evt',
        component: 'agent',
        ...scope,
        agent: 'agent-7',
        event,
      } satisfies ParsedSubject,
    })),
    {
      name: 'agent chunk',
      subject: subjects.agentChunk({ ...scope, agent: 'agent-7' }),
      parsed: { kind: 'str', component: 'agent', ...scope, agent: 'agent-7', stream: 'chunk' },
    },
    {
      name: 'cancel',
      subject: subjects.cancel(scope),
      parsed: { kind: 'cmd', component: 'sys', ...scope, action: 'cancel' },
    },
    {
      name: 'tool progress',
      subject: subjects.toolProgress({ ...scope, target: 'skills' }),
      parsed: { kind: 'evt', component: 'tool', ...scope, target: 'skills', event: 'progress' },
    },
    {
      name: 'task cancel',
      subject: subjects.taskCancel({ ...scope, target: 'skills' }),
      parsed: { kind: 'ctl', component: 'task', ...scope, target: 'skills', action: 'cancel' },
    },
    {
      name: 'mcp refresh',
      subject: subjects.mcpRefresh({ ...scope, server: 'docs' }),
      parsed: { kind: 'ctl', component: 'mcp', ...scope, server: 'docs', action: 'refresh' },
    },
    {
      name: 'registry changed',
      subject: subjects.registryChanged(scope.project),
      parsed: {
        kind: 'evt',
        component: 'sys',
        project: scope.project,
        channel: 'sys',
        event: 'registry_changed',
      },
    },
    {
      name: 'key revoked',
      subject: subjects.keyRevoked(scope.project),
      parsed: {
        kind: 'evt',
        component: 'sys',
        project: scope.project,
        channel: 'sys',
        event: 'key_revoked',
      },
    },
  ];

  it('build the subjects of the v1 grammar', () => {
    expect(cases.map((c) => c.subject)).toEqual([
      'cg.v1.proj_1.main-chan.cmd.tool.skills.run_cmd',
      'cg.v1.proj_1.main-chan.evt.tool.skills.result',
      'cg.v1.proj_1.main-chan.cmd.agent.agent-7.wakeup',
      'cg.v1.proj_1.main-chan.evt.agent.agent-7.task',
      'cg.v1.proj_1.main-chan.evt.agent.agent-7.step',
      'cg.v1.proj_1.main-chan.evt.agent.agent-7.state',
      'cg.v1.proj_1.main-chan.str.agent.agent-7.chunk',
      'cg.v1.proj_1.main-chan.cmd.sys.cancel',
      'cg.v1.proj_1.main-chan.evt.tool.skills.progress',
      'cg.v1.proj_1.main-chan.ctl.task.skills.cancel',
      'cg.v1.proj_1.main-chan.ctl.mcp.docs.refresh',
      'cg.v1.proj_1.sys.evt.sys.registry.changed',
      'cg.v1.proj_1.sys.evt.sys.key.revoked',
    ]);
  });

  it('give the tools service every tool call and every registry change, in the streams', () => {
    const call = subjects.toolCall({ ...scope, target: 'web', tool: 'search' });
    expect(matches(subjects.allToolCallsFilter(), call)).toBe(true);
    expect(matches(subjects.allToolCallsFilter(), subjects.cancel(scope))).toBe(false);
    const changed = subjects.registryChanged('proj_1');
    expect(matches(subjects.registryChangedFilter(), changed)).toBe(true);
    expect(subjects.eventStreamSubjects().some((f) => matches(f, changed))).toBe(true);
    expect(matches(subjects.toolResultFilter(scope), changed)).toBe(false);
  });

  it('give every api instance each key revocation, apart from registry changes', () => {
    const revoked = subjects.keyRevoked('proj_1');
    expect(matches(subjects.keyRevokedFilter(), revoked)).toBe(true);
    expect(matches(subjects.registryChangedFilter(), revoked)).toBe(false);
    expect(matches(subjects.keyRevokedFilter(), subjects.registryChanged('proj_1'))).toBe(false);
  });

  it('keep task cancels out of both streams and progress out of the result filter', () => {
    const cancel = subjects.taskCancel({ ...scope, target: 'skills' });
    expect(matches(subjects.taskCancelFilter('skills'), cancel)).toBe(true);
    expect(matches(subjects.taskCancelFilter('other'), cancel)).toBe(false);
    const streams = [subjects.allCommandsFilter(), ...subjects.eventStreamSubjects()];
    for (const f of streams) expect(matches(f, cancel)).toBe(false);
    const refresh = subjects.mcpRefresh({ ...scope, server: 'docs' });
    expect(matches(subjects.mcpRefreshFilter(), refresh)).toBe(true);
    for (const f of streams) expect(matches(f, refresh)).toBe(false);
    const progress = subjects.toolProgress({ ...scope, target: 'skills' });
    expect(matches(subjects.toolResultFilter(scope), progress)).toBe(false);
    expect(subjects.eventStreamSubjects().some((f) => matches(f, progress))).toBe(true);
  });

  it.each(cases)('parse the $name subject back into what built it', ({ subject, parsed }) => {
    expect(subjects.parse(subject)).toEqual(parsed);
  });

  it('use the root they were created with', () => {
    const other = createSubjects('t0a1b2');
    const subject = other.toolCall({ ...scope, target: 'skills', tool: 'run_cmd' });
    expect(subject).toBe('t0a1b2.v1.proj_1.main-chan.cmd.tool.skills.run_cmd');
    expect(other.root).toBe('t0a1b2');
    expect(other.parse(subject)).toMatchObject({ target: 'skills', tool: 'run_cmd' });
  });

  it('default to the cg root', () => {
    expect(createSubjects().root).toBe('cg');
  });

  it('reject a root that is not a single token', () => {
    for (const root of ['', 'a.b', 'a*', '>', 'has space']) {
      const err = protocolError(() => createSubjects(root));
      expect([err.code, err.details]).toEqual(['invalid_id', { field: 'root' }]);
    }
  });
});

describe('invalid ids in subjects', () => {
  const bad = ['', 'a.b', '*', '>', 'white space', 'ünïcode', 'x'.repeat(65)];
  const builders: Array<{ field: string; build: (v: string) => string }> = [
    {
      field: 'project',
      build: (v) => subjects.toolCall({ ...scope, project: v, target: 't', tool: 'x' }),
    },
    {
      field: 'channel',
      build: (v) => subjects.toolCall({ ...scope, channel: v, target: 't', tool: 'x' }),
    },
    { field: 'target', build: (v) => subjects.toolCall({ ...scope, target: v, tool: 'x' }) },
    { field: 'tool', build: (v) => subjects.toolCall({ ...scope, target: 't', tool: v }) },
    { field: 'target', build: (v) => subjects.toolResult({ ...scope, target: v }) },
    { field: 'agent', build: (v) => subjects.agentWakeup({ ...scope, agent: v }) },
    { field: 'agent', build: (v) => subjects.agentEvent({ ...scope, agent: v, event: 'task' }) },
    { field: 'agent', build: (v) => subjects.agentChunk({ ...scope, agent: v }) },
    { field: 'project', build: (v) => subjects.cancel({ ...scope, project: v }) },
    { field: 'channel', build: (v) => subjects.toolResultFilter({ ...scope, channel: v }) },
    { field: 'target', build: (v) => subjects.toolCallFilter(v) },
  ];

  it.each(builders)(
    'are rejected by the builder with invalid_id naming $field',
    ({ field, build }) => {
      for (const value of bad) {
        const err = protocolError(() => build(value));
        expect(err.code).toBe('invalid_id');
        expect(err.details).toEqual({ field });
        expect(err.message).toContain(field);
      }
    },
  );

  it('accept ids of exactly 64 characters', () => {
    const long = 'x'.repeat(64);
    expect(subjects.toolCall({ project: long, channel: long, target: long, tool: long })).toBe(
      ['cg', 'v1', long, long, 'cmd', 'tool', long, long].join('.'),
    );
  });

  const parsed: Array<{ field: string; subject: string }> = [
    { field: 'project', subject: 'cg.v1.p$.c.cmd.tool.skills.run' },
    { field: 'channel', subject: 'cg.v1.p.c+c.cmd.tool.skills.run' },
    { field: 'target', subject: 'cg.v1.p.c.cmd.tool.sk*ills.run' },
    { field: 'tool', subject: 'cg.v1.p.c.cmd.tool.skills.r#un' },
    { field: 'target', subject: 'cg.v1.p.c.evt.tool.sk@ills.result' },
    { field: 'agent', subject: 'cg.v1.p.c.cmd.agent.a!.wakeup' },
    { field: 'agent', subject: 'cg.v1.p.c.evt.agent.a!.step' },
    { field: 'agent', subject: 'cg.v1.p.c.str.agent.a!.chunk' },
    { field: 'project', subject: 'cg.v1..c.cmd.sys.cancel' },
  ];

  it.each(parsed)(
    'are rejected by the parser with invalid_id naming $field ($subject)',
    ({ field, subject }) => {
      const err = protocolError(() => subjects.parse(subject));
      expect(err.code).toBe('invalid_id');
      expect(err.details).toEqual({ field });
    },
  );
});

describe('parsing subjects that are not v1 subjects of this root', () => {
  it.each([
    ['another root', 'xx.v1.p.c.cmd.tool.skills.run'],
    ['another version', 'cg.v2.p.c.cmd.tool.skills.run'],
    ['no version', 'cg'],
    ['the empty subject', ''],
  ])('rejects %s with invalid_message', (_what, subject) => {
    const err = protocolError(() => subjects.parse(subject));
    expect(err.code).toBe('invalid_message');
    expect(err.message).toContain('expected cg.v1');
  });

  it('rejects a subject with too few tokens', () => {
    for (const subject of ['cg.v1', 'cg.v1.p.c', 'cg.v1.p.c.cmd.sys']) {
      const err = protocolError(() => subjects.parse(subject));
      expect(err.code).toBe('invalid_message');
      expect(err.message).toContain('too few tokens');
    }
  });

  it.each([
    'cg.v1.p.c.cmd.tool.skills',
    'cg.v1.p.c.cmd.tool.skills.run.extra',
    'cg.v1.p.c.cmd.agent.a.sleep',
    'cg.v1.p.c.cmd.sys.cancel.now',
    'cg.v1.p.c.cmd.sys.reboot',
    'cg.v1.p.c.evt.tool.skills.started',
    'cg.v1.p.c.evt.agent.a.chunk',
    'cg.v1.p.c.str.agent.a.task',
    'cg.v1.p.c.str.tool.skills.chunk',
    'cg.v1.p.c.rpc.tool.skills.run',
    'cg.v1.p.c.cmd.user.u.run',
  ])('rejects %s, which the grammar does not define', (subject) => {
    expect(protocolError(() => subjects.parse(subject)).code).toBe('invalid_message');
  });
});

describe('filters', () => {
  const call = subjects.toolCall({ ...scope, target: 'skills', tool: 'run_cmd' });
  const otherTarget = subjects.toolCall({ ...scope, target: 'search', tool: 'run_cmd' });
  const cancel = subjects.cancel(scope);
  const result = subjects.toolResult({ ...scope, target: 'skills' });
  const otherChannel = subjects.toolResult({ ...scope, channel: 'other', target: 'skills' });

  it('the tool call filter takes every call of its target across projects and channels', () => {
    const filter = subjects.toolCallFilter('skills');
    expect(filter).toBe('cg.v1.*.*.cmd.tool.skills.>');
    expect(matches(filter, call)).toBe(true);
    expect(
      matches(
        filter,
        subjects.toolCall({ project: 'p2', channel: 'c2', target: 'skills', tool: 'x' }),
      ),
    ).toBe(true);
    expect(matches(filter, otherTarget)).toBe(false);
    expect(matches(filter, result)).toBe(false);
  });

  it('the cancel filter takes cancels of every project and channel, nothing else', () => {
    const filter = subjects.cancelFilter();
    expect(matches(filter, cancel)).toBe(true);
    expect(matches(filter, subjects.cancel({ project: 'p2', channel: 'c2' }))).toBe(true);
    expect(matches(filter, call)).toBe(false);
  });

  it('the agent wakeup filter takes wakeups of every agent, project and channel, nothing else', () => {
    const filter = subjects.agentWakeupFilter();
    expect(matches(filter, subjects.agentWakeup({ ...scope, agent: 'a' }))).toBe(true);
    expect(
      matches(filter, subjects.agentWakeup({ project: 'p2', channel: 'c2', agent: 'b' })),
    ).toBe(true);
    expect(matches(filter, subjects.agentEvent({ ...scope, agent: 'a', event: 'task' }))).toBe(
      false,
    );
    expect(matches(filter, call)).toBe(false);
  });

  it('the tool result filter takes result events of one project and channel', () => {
    const filter = subjects.toolResultFilter(scope);
    expect(matches(filter, result)).toBe(true);
    expect(matches(filter, subjects.toolResult({ ...scope, target: 'search' }))).toBe(true);
    expect(matches(filter, otherChannel)).toBe(false);
    expect(matches(filter, subjects.agentEvent({ ...scope, agent: 'a', event: 'task' }))).toBe(
      false,
    );
  });

  it('the project activity filters take events and chunks of every channel, not commands', () => {
    const filters = subjects.projectActivityFilters(scope.project);
    const any = (s: string) => filters.some((f) => matches(f, s));
    for (const s of [
      result,
      otherChannel,
      subjects.toolProgress({ ...scope, target: 'skills' }),
      subjects.agentEvent({ ...scope, agent: 'a', event: 'task' }),
      subjects.agentChunk({ ...scope, agent: 'a' }),
    ])
      expect(any(s), s).toBe(true);
    expect(any(call)).toBe(false);
    expect(any(cancel)).toBe(false);
    expect(any(subjects.toolResult({ ...scope, project: 'other', target: 'skills' }))).toBe(false);
    expect(() => subjects.projectActivityFilters('a.b')).toThrow(ProtocolError);
  });

  it("the project tool calls filter takes the project's calls of every channel and target", () => {
    const filter = subjects.projectToolCallsFilter(scope.project);
    expect(matches(filter, call)).toBe(true);
    expect(
      matches(filter, subjects.toolCall({ ...scope, channel: 'c2', target: 'web', tool: 'x' })),
    ).toBe(true);
    expect(
      matches(filter, subjects.toolCall({ ...scope, project: 'other', target: 't', tool: 'x' })),
    ).toBe(false);
    expect(matches(filter, cancel)).toBe(false);
    expect(matches(filter, subjects.agentWakeup({ ...scope, agent: 'a' }))).toBe(false);
    expect(subjects.projectCommandStreamSubjects(scope.project).some((f) => matches(f, call))).toBe(
      true,
    );
    expect(() => subjects.projectToolCallsFilter('p.*')).toThrow(ProtocolError);
  });

  it('the stream subjects split commands from events and leave lossy chunks out', () => {
    const [cmd, ...moreCmd] = subjects.projectCommandStreamSubjects(scope.project);
    const [evt, ...moreEvt] = subjects.eventStreamSubjects();
    expect(moreCmd).toEqual([]);
    expect(moreEvt).toEqual([]);
    const chunk = subjects.agentChunk({ ...scope, agent: 'a' });
    const wakeup = subjects.agentWakeup({ ...scope, agent: 'a' });
    for (const s of [call, cancel, wakeup])
      expect([matches(cmd!, s), matches(evt!, s)]).toEqual([true, false]);
    for (const s of [result, subjects.agentEvent({ ...scope, agent: 'a', event: 'state' })]) {
      expect([matches(cmd!, s), matches(evt!, s)]).toEqual([false, true]);
    }
    expect([matches(cmd!, chunk), matches(evt!, chunk)]).toEqual([false, false]);
  });

  it('of different roots do not overlap', () => {
    const other = createSubjects('t123');
    expect(matches(subjects.allCommandsFilter(), other.cancel(scope))).toBe(false);
    expect(matches(other.toolCallFilter('skills'), call)).toBe(false);
    expect(
      matches(subjects.projectCommandStreamSubjects(scope.project)[0]!, other.cancel(scope)),
    ).toBe(false);
  });

  it("a project's command stream and its filters hold that project's commands only", () => {
    const mine = subjects.projectCommandStreamSubjects(scope.project)[0]!;
    const theirs = { ...scope, project: 'other' };
    expect(matches(mine, subjects.toolCall({ ...theirs, target: 't', tool: 'x' }))).toBe(false);
    expect(matches(mine, subjects.cancel(theirs))).toBe(false);
    expect(matches(subjects.cancelFilter(scope.project), cancel)).toBe(true);
    expect(matches(subjects.cancelFilter('other'), cancel)).toBe(false);
    expect(matches(subjects.toolCallFilter(call.split('.')[6]!, 'other'), call)).toBe(false);
    expect(matches(subjects.allToolCallsFilter(scope.project), call)).toBe(true);
    expect(matches(subjects.allToolCallsFilter('other'), call)).toBe(false);
    const wakeup = subjects.agentWakeup({ ...scope, agent: 'a' });
    expect(matches(subjects.agentWakeupFilter(scope.project), wakeup)).toBe(true);
    expect(matches(subjects.agentWakeupFilter('other'), wakeup)).toBe(false);
  });
});

describe('tool names', () => {
  it('split into target and tool and join back', () => {
    expect(splitToolName('skills.run_cmd')).toEqual({ target: 'skills', tool: 'run_cmd' });
    expect(joinToolName('skills', 'run_cmd')).toBe('skills.run_cmd');
  });

  it.each([
    ['run_cmd', 'target'],
    ['.run_cmd', 'target'],
    ['skills.', 'tool'],
    ['skills.run.cmd', 'tool'],
    ['sk ills.run', 'target'],
  ])('reject %s with invalid_id naming the %s', (name, field) => {
    const err = protocolError(() => splitToolName(name));
    expect(err.code).toBe('invalid_id');
    expect(err.details).toEqual({ field });
  });

  it('refuse to join ids that are not single tokens', () => {
    expect(protocolError(() => joinToolName('a.b', 'c')).details).toEqual({ field: 'target' });
    expect(protocolError(() => joinToolName('a', 'c>')).details).toEqual({ field: 'tool' });
  });
});
