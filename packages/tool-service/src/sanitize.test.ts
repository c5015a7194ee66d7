import { describe, expect, it } from 'vitest';
import { sanitizeResult, scrubHostPaths } from './sanitize.ts';

describe('scrubHostPaths', () => {
  it.each([
    [
      "ENOENT: no such file or directory, open '/home/ada/toolmesh/.data/artifacts/p/x.bin'",
      "ENOENT: no such file or directory, open '<path>'",
    ],
    [
      'at run (/home/ada/toolmesh/packages/tool-service/src/execute.ts:12:3)',
      'at run (<path>:12:3)',
    ],
    ['at file:///srv/app/node_modules/pg/lib/client.js:45:7', 'at <path>:45:7'],
    ['cannot write /tmp/toolmesh-skill-ab12/out', 'cannot write <path>'],
    ['GET https://api.example.com/v1/items failed', 'GET https://api.example.com/v1/items failed'],
    [
      'connect to postgres://app:pw@db/mesh refused',
      'connect to postgres://app:***@db/mesh refused',
    ],
    ['wrote a/b/c and /tmp', 'wrote a/b/c and /tmp'],
    ['ratio 1/2/3 kept', 'ratio 1/2/3 kept'],
  ])('%s', (input, expected) => {
    expect(scrubHostPaths(input)).toBe(expected);
  });
});

describe('sanitizeResult', () => {
  it('scrubs the message and details of internal_error only', () => {
    const internal = sanitizeResult({
      status: 'failed',
      duration_ms: 1,
      error: {
        code: 'internal_error',
        message: 'x.crashed: EACCES /home/svc/app/.data/admin_key',
        details: { stack: ['at /home/svc/app/a.ts:1:1'], n: 2 },
      },
    });
    expect(internal.error).toEqual({
      code: 'internal_error',
      message: 'x.crashed: EACCES <path>',
      details: { stack: ['at <path>:1:1'], n: 2 },
    });
    const tool = {
      status: 'failed' as const,
      duration_ms: 1,
      error: { code: 'tool_error' as const, message: 'exit 1 in /work/session/out' },
    };
    expect(sanitizeResult(tool)).toBe(tool);
  });
});
