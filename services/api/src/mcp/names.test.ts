import { describe, expect, it } from 'vitest';
import { buildNameTable, mcpToolName } from './names.ts';

const VALID = /^[A-Za-z0-9_-]{1,64}$/;

describe('MCP names of registry tools', () => {
  it('joins target and tool with __ when that is unambiguous', () => {
    expect(mcpToolName('builtin.echo')).toBe('builtin__echo');
    expect(mcpToolName('web-1.get_page')).toBe('web-1__get_page');
  });

  it('hashes names that would be ambiguous or too long, and keeps them valid', () => {
    const a = mcpToolName('a__b.c');
    const b = mcpToolName('a.b__c');
    expect(a).not.toBe(b);
    expect(a).toMatch(/_h[0-9a-f]{8}$/);
    const long = mcpToolName(`${'t'.repeat(40)}.${'x'.repeat(40)}`);
    expect(long).toMatch(VALID);
    for (const n of [a, b, long]) expect(n).toMatch(VALID);
  });

  it('maps back through the table only, and never two tools onto one name', () => {
    const tools = ['a__b.c', 'a.b__c', 'a.b', 'builtin.echo'].map((name) => ({ name }));
    const table = buildNameTable(tools);
    const names = table.entries.map((e) => e.mcpName);
    expect(new Set(names).size).toBe(4);
    for (const e of table.entries) expect(table.resolve(e.mcpName)).toBe(e.tool);
    expect(table.resolve('builtin.echo')).toBeUndefined();
    expect(table.resolve('a__b__c')).toBeUndefined();
  });
});
