// MCP names of registry tools. Registry names are `<target>.<tool>`; many MCP clients accept
// only [A-Za-z0-9_-]{1,64} (the model APIs behind them refuse dots), so `skills.run_cmd` is
// offered as `skills__run_cmd`. The mapping is per name and deterministic, so it does not shift
// when other tools come and go; a name that would be ambiguous (a `__` inside the target or the
// tool, or too long) gets a hash of the registry name instead. A call is mapped back through the
// table of the tools the caller may see, never by parsing: a name the client invents reaches
// nothing.
import { createHash } from 'node:crypto';

const MAX_NAME = 64;
const SEPARATOR = '__';

const hashOf = (name: string, chars: number) =>
  createHash('sha256').update(name).digest('hex').slice(0, chars);

/** The MCP name of a registry tool name. */
export function mcpToolName(registryName: string): string {
  const dot = registryName.indexOf('.');
  const target = registryName.slice(0, dot);
  const tool = registryName.slice(dot + 1);
  const plain = `${target}${SEPARATOR}${tool}`;
  if (!target.includes(SEPARATOR) && !tool.includes(SEPARATOR) && plain.length <= MAX_NAME) {
    return plain;
  }
  // Truncated and suffixed: still readable, and distinct from every plain name (a plain name has
  // exactly one `__`; a collision would need a hash preimage, and is checked in the table).
  return `${plain.slice(0, MAX_NAME - 10)}_h${hashOf(registryName, 8)}`;
}

export interface NameTable<T extends { name: string }> {
  /** Tools in registry order with their MCP names. */
  readonly entries: readonly { mcpName: string; tool: T }[];
  /** The tool an MCP name stands for, if the caller may see it. */
  resolve(mcpName: string): T | undefined;
}

export function buildNameTable<T extends { name: string }>(tools: readonly T[]): NameTable<T> {
  const byMcp = new Map<string, T>();
  const entries: { mcpName: string; tool: T }[] = [];
  for (const tool of tools) {
    let mcpName = mcpToolName(tool.name);
    // Defensive: two registry names on one MCP name would make a call ambiguous. The later one
    // gets a longer hash; it never replaces the first.
    if (byMcp.has(mcpName))
      mcpName = `${mcpName.slice(0, MAX_NAME - 18)}_h${hashOf(tool.name, 16)}`;
    if (byMcp.has(mcpName)) continue;
    byMcp.set(mcpName, tool);
    entries.push({ mcpName, tool });
  }
  return { entries, resolve: (n) => byMcp.get(n) };
}
