// Which registry key a call's sandbox gets, by reuse mode, agent and session id.
import { describe, expect, it } from 'vitest';
import { DEFAULT_SESSION, scopeOf } from './sessions.ts';

const ctx = (agentId?: string) => ({ project: 'p', agentId, toolCallId: 'call-1' });

describe('scopeOf', () => {
  it('project_agent: a session id, or the agent default session, is shared', () => {
    expect(scopeOf('project_agent', ctx('ada'), 's1')).toMatchObject({
      registryKey: 'ada/s1',
      sessionKey: 'ada/s1',
      key: { project: 'p', agent: 'ada', session: 's1' },
    });
    expect(scopeOf('project_agent', ctx('ada'), undefined).sessionKey).toBe(
      `ada/${DEFAULT_SESSION}`,
    );
    expect(scopeOf('project_agent', ctx(), 's1').sessionKey).toBe('-/s1');
  });

  it('a call with neither agent nor session, and every call in none mode, gets its own', () => {
    for (const scope of [
      scopeOf('project_agent', ctx(), undefined),
      scopeOf('none', ctx('ada'), 's1'),
      scopeOf('none', ctx(), undefined),
    ]) {
      expect(scope.registryKey).toBe('call:call-1');
      expect(scope.sessionKey).toBeNull();
      expect(scope.key.session).toBe('call-1');
    }
  });
});
