// Registry names of an MCP server's tools. A registry tool is `<server>.<tool>`, both ids of
// [A-Za-z0-9_-]{1,64}; MCP allows more in a tool name (dots, slashes, 128 characters). A name is
// mapped by replacing every other character with `_`; when two names map to the same id, or a
// name is too long or empty, the tool is refused with a reason rather than silently renamed.
import { isValidId } from '@toolmesh/protocol';

export interface ToolIdMapping {
  /** The MCP name (what `tools/call` is sent). */
  readonly mcpName: string;
  /** The registry token after the server's name; undefined when refused. */
  readonly id: string | undefined;
  /** Why a tool was refused. */
  readonly refused?: string;
}

const OTHER = /[^A-Za-z0-9_-]/g;

/** Maps every tool name of one listing at once, so collisions are seen. A name that is an id
 * already keeps it; a mapped name that lands on a taken id is refused. */
export function mapToolNames(names: readonly string[]): ToolIdMapping[] {
  const exact = new Set(names.filter((n) => isValidId(n)));
  const mapped = new Map<string, number>();
  for (const n of names) {
    if (exact.has(n)) continue;
    const id = n.replace(OTHER, '_');
    mapped.set(id, (mapped.get(id) ?? 0) + 1);
  }
  return names.map((mcpName) => {
    if (exact.has(mcpName)) return { mcpName, id: mcpName };
    const id = mcpName.replace(OTHER, '_');
    if (!isValidId(id)) {
      return {
        mcpName,
        id: undefined,
        refused: `tool name ${JSON.stringify(mcpName)} does not fit an id (1-64 of [A-Za-z0-9_-])`,
      };
    }
    if (exact.has(id) || (mapped.get(id) ?? 0) > 1) {
      return {
        mcpName,
        id: undefined,
        refused: `tool name ${JSON.stringify(mcpName)} maps to ${id}, which another tool of the server has`,
      };
    }
    return { mcpName, id };
  });
}
