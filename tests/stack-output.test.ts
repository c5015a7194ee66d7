// `pnpm stack`'s output of its services' log lines: readable on a terminal (time, level,
// service, message, then the call's ids), pino's JSON elsewhere and with --json.
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { stackFormatter } from '../scripts/stack-output.ts';

const line = JSON.stringify({
  level: 50,
  time: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
  pid: 4242,
  hostname: 'box',
  service: 'tools',
  project: 'p1',
  tool_call_id: '01a2200e-cf79-74a8-9c0a-754dca340131',
  msg: 'call failed',
});

describe('pnpm stack output', () => {
  it('is a readable line on a terminal', () => {
    const out = stackFormatter(['node', 'stack.ts'], { isTTY: true })('tools', line);
    const plain = stripVTControlCharacters(out);
    const local = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    const hh = String(local.getHours()).padStart(2, '0');
    expect(plain).toBe(
      `[${hh}:04:05.678] ERROR (tools): call failed {"project":"p1","tool_call_id":"01a2200e-cf79-74a8-9c0a-754dca340131"}`,
    );
    expect(plain).not.toContain('4242');
    // A line that is not pino's is shown as it came.
    expect(stackFormatter([], { isTTY: true })('api', 'plain words')).toBe('[api] plain words');
  });

  it('stays JSON when piped, and with --json on a terminal', () => {
    expect(stackFormatter(['node', 'stack.ts'], { isTTY: false })('tools', line)).toBe(
      `[tools] ${line}`,
    );
    expect(stackFormatter(['node', 'stack.ts', '--json'], { isTTY: true })('tools', line)).toBe(
      `[tools] ${line}`,
    );
  });
});
