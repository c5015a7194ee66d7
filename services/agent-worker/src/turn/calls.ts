// The model's calls of a step, planned: each gets its tool call id, and is either published
// (a registry tool the agent may call, with the agent's config for the tool merged over the
// model's arguments) or answered here (list_available_tools; a refusal: a tool not allowed,
// arguments that are not a JSON object). Answered calls are never published.
import { v7 as uuidv7 } from 'uuid';
import type { ErrorCode, ToolResultContent } from '@toolmesh/protocol';
import type { StepCall } from '@toolmesh/store';
import type { ModelCall } from '../llm.ts';
import {
  LIST_AVAILABLE_TOOLS,
  functionName,
  listAvailable,
  toolNameOf,
  type Toolset,
} from '../toolset.ts';

function refused(code: ErrorCode, message: string): ToolResultContent {
  return { status: 'failed', error: { code, message }, duration_ms: 0 };
}

function parseArguments(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text === '' ? '{}' : text);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turns the model's calls into step calls: registry tools are published (with the agent's
 * config for the tool merged over the model's arguments), list_available_tools is answered
 * here, the rest refused.
 */
export function planCalls(
  calls: ModelCall[],
  tools: Toolset,
  toolDeadlineMs: number,
  profile: string | null,
) {
  return calls.map((c): StepCall & { fn: string; said: string; timeoutMs?: number } => {
    const toolCallId = uuidv7();
    const args = parseArguments(c.arguments);
    // Models often write a tool by its registry name (`skills.run_cmd`, as SKILL.md files and
    // docs do) instead of its function name: the same allowed set answers both spellings.
    const tool = tools.byFunction.get(c.name) ?? tools.byFunction.get(functionName(c.name));
    const base = {
      toolCallId,
      fn: c.name,
      said: JSON.stringify(args ?? {}),
      arguments: args ?? {},
      deadlineMs: 0,
    };
    if (c.name === LIST_AVAILABLE_TOOLS && tools.internal.has(c.name)) {
      return {
        ...base,
        toolName: `internal.${LIST_AVAILABLE_TOOLS}`,
        answer: { status: 'succeeded', result: listAvailable(tools, args ?? {}), duration_ms: 0 },
      };
    }
    if (!tool) {
      const name = toolNameOf(c.name);
      const known = [...tools.byFunction.keys()];
      const shown = known.slice(0, 50).join(', ') || 'none';
      return {
        ...base,
        toolName: name,
        answer: refused(
          'tool_not_allowed',
          `tool ${name} is not allowed for this agent (profile ${profile ?? 'none'}); tools it may call: ${shown}${known.length > 50 ? ', ... (list_available_tools lists them all)' : ''}. Nothing was called.`,
        ),
      };
    }
    if (!args) {
      return {
        ...base,
        toolName: tool.name,
        answer: refused('invalid_arguments', `arguments of ${tool.name} are not a JSON object`),
      };
    }
    const own = tool.options['timeout_ms'];
    const timeoutMs = typeof own === 'number' && own > 0 ? own : undefined;
    return {
      ...base,
      toolName: tool.name,
      // The agent's config for this tool wins over the model's values for the same keys.
      arguments: { ...args, ...tools.config.get(tool.name) },
      deadlineMs: timeoutMs ?? toolDeadlineMs,
      timeoutMs,
    };
  });
}
