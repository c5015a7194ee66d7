import { describe, expect, it } from 'vitest';
import type { McpNotice } from '@toolmesh/protocol';
import { logPasses, noticeFor } from './notices.ts';

const updated: McpNotice = {
  v: 1,
  method: 'notifications/resources/updated',
  params: { uri: 'test://watched-resource' },
};
const log: McpNotice = {
  v: 1,
  method: 'notifications/message',
  params: { level: 'info', logger: 'db', data: 'x' },
};

describe("an MCP server's notice as one endpoint's client sees it", () => {
  it("the server's own endpoint: as sent, and nothing of another server", () => {
    expect(noticeFor('docs', 'docs', updated)).toEqual(updated);
    expect(noticeFor('docs', 'web', updated)).toBeUndefined();
  });

  it("the project's facade: prefixed URIs and loggers", () => {
    expect(noticeFor(undefined, 'docs', updated)?.params).toEqual({
      uri: 'toolmesh://mcp-servers/docs/test://watched-resource',
    });
    expect(noticeFor(undefined, 'docs', log)?.params['logger']).toBe('docs__db');
    const { logger: _, ...anonymous } = log.params;
    expect(noticeFor(undefined, 'docs', { ...log, params: anonymous })?.params['logger']).toBe(
      'docs',
    );
  });
});

describe('log levels', () => {
  it('passes a message at or above the threshold, and no unknown level', () => {
    expect(logPasses('error', 'info')).toBe(true);
    expect(logPasses('info', 'info')).toBe(true);
    expect(logPasses('debug', 'info')).toBe(false);
    expect(logPasses('emergency', 'alert')).toBe(true);
    expect(logPasses('loud', 'debug')).toBe(false);
  });
});
