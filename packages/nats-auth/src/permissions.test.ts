import { describe, expect, it } from 'vitest';
import { createSubjects, decidedCallEnvelope, toolCallEnvelope } from '@toolmesh/protocol';
import { ServiceUser } from './keys.ts';
import { projectCredentialPermissions, servicePermissions } from './permissions.ts';

const root = 'cg';
const subjects = createSubjects(root);
const call = { tool_call_id: 'call-1', tool_name: 'skills.run_cmd', arguments: {} };
const envelope = (project: string) => toolCallEnvelope(subjects, { project, channel: 'c', call });

/** NATS subject matching: `*` matches one token, a trailing `>` one or more. */
function allowed(patterns: string[], subject: string): boolean {
  return patterns.some((filter) => {
    const f = filter.split('.');
    const s = subject.split('.');
    for (let i = 0; i < f.length; i++) {
      if (f[i] === '>') return s.length > i;
      if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
    }
    return f.length === s.length;
  });
}

describe('publish permissions and the tool-call envelope', () => {
  it('let every publisher of calls send the envelope it builds', () => {
    const sent = envelope('p1');
    for (const user of [ServiceUser.api, ServiceUser.agentWorker, ServiceUser.admin]) {
      expect(allowed(servicePermissions(root, user).pub, sent.subject), user).toBe(true);
    }
    // The approval gate of every tool service publishes a decided call again.
    const decided = decidedCallEnvelope({
      project_id: 'p1',
      tool_call_id: 'call-1',
      approval_id: 'a-1',
      subject: sent.subject,
      body: Buffer.from(sent.data),
      headers: sent.headers,
    });
    for (const user of [ServiceUser.skills, ServiceUser.tools]) {
      expect(allowed(servicePermissions(root, user).pub, decided.subject), user).toBe(true);
    }
    expect(allowed(servicePermissions(root, ServiceUser.sandboxReaper).pub, sent.subject)).toBe(
      false,
    );
  });

  it("let a project's credential send its own project's calls and no other's", () => {
    const pub = projectCredentialPermissions(root, 'p1', '_INBOX_x').pub;
    expect(allowed(pub, envelope('p1').subject)).toBe(true);
    expect(allowed(pub, envelope('p2').subject)).toBe(false);
    const otherRoot = createSubjects('other').toolCall({
      project: 'p1',
      channel: 'c',
      target: 'skills',
      tool: 'run_cmd',
    });
    expect(allowed(pub, otherRoot)).toBe(false);
  });
});
