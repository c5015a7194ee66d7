// Stage 2, bind: the tool a well-formed call runs, with its validated arguments and deadline; a
// rejection (unknown or disabled tool, bad arguments); or a skip (a registry service's resolver
// says another service serves it).
import type { ToolDefinition } from '../define.ts';
import type { Registry } from '../registry.ts';
import { bindResolved, type Skip, type ToolResolver } from '../resolve.ts';
import {
  bindStatic,
  type Bound,
  type Intake,
  type IntakeLimits,
  type Rejection,
} from './intake.ts';

export type Bind = (accepted: Intake) => Promise<Bound | Rejection | Skip>;

export interface BindOptions {
  limits: IntakeLimits;
  /** A registry service: every call resolved at run time. */
  resolver?: ToolResolver | undefined;
  /** A static service: its tools by name. */
  tools: ReadonlyMap<string, ToolDefinition>;
  /**
   * A static service's registry, when given: a tool the project has disabled fails with
   * tool_disabled. A project without a row for the tool runs it (diagnostic calls need none).
   */
  registry?: Registry | undefined;
}

export function createBind(o: BindOptions): Bind {
  const { limits, resolver, tools, registry } = o;
  return async (accepted) => {
    if (resolver) return bindResolved(accepted, resolver, limits);
    const bound = bindStatic(accepted, tools, limits);
    if (!registry || 'ok' in bound) return bound;
    const { ids } = accepted;
    const row = await registry.get(ids.project, `${ids.target}.${ids.tool}`);
    if (row && !row.enabled) {
      return {
        ok: false,
        ids,
        code: 'tool_disabled',
        message: `tool ${ids.target}.${ids.tool} is disabled in project ${ids.project}`,
      };
    }
    return bound;
  };
}
