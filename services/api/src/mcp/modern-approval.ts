// A plain 2026-07-28 tools/call (no task) of a call that waits for a human approval, asked of a
// client that declared elicitation with the revision's multi-round-trip requests: the request is
// answered `input_required`, its input request the approval's elicitation (keyed by the approval
// id, the same form as the 2025 elicitation path) and its requestState naming the call. The
// call goes on waiting meanwhile; nothing about it is cancelled. The client re-sends the same
// request with its answer in `inputResponses` and the requestState echoed: the answer decides the
// approval (accept with approve → approved; anything else, a decline or a cancel included →
// denied), and the re-send waits for that call's card. It never publishes: the requestState's
// tool_call_id names the call already on the mesh.
//
// The requestState is read as what it is, client input: it names an approval id and a
// tool_call_id, and both are looked up in the project the request authenticated for, the pair
// must match one approval row, and the tool must be the one the request names. A state minted
// for another project finds no approval there and is refused; within a project it grants
// nothing the project's key could not do through the approvals routes.
import {
  ProtocolError,
  ProtocolErrorCode,
  type InputRequest,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ApprovalRecord, CallsStore, RegistryStore } from '@toolmesh/store';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalDecider } from '../approvals.ts';
import { applyAnswer, approvalElicitation } from './approval-input.ts';
import { errorResult } from './call-results.ts';
import type { MeshCalls } from './calls.ts';
import { mcpToolName } from './names.ts';
import { CALL_TOOL } from './search.ts';

const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Does a request's envelope declare that its client answers elicitation (form) requests? */
export function declaresElicitation(envelope: unknown): boolean {
  const caps = isRecord(envelope) ? envelope[CLIENT_CAPABILITIES_META] : undefined;
  const elicitation = isRecord(caps) ? caps['elicitation'] : undefined;
  // `{}` means form mode; a client that declared url mode alone cannot fill in the form.
  return isRecord(elicitation) && (Object.keys(elicitation).length === 0 || 'form' in elicitation);
}

const State = z.strictObject({
  v: z.literal(1),
  approval_id: z.uuid(),
  tool_call_id: z.string().min(1).max(255),
});
type State = z.infer<typeof State>;

const encode = (s: State) => Buffer.from(JSON.stringify(s)).toString('base64url');

const invalidState = (why: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid requestState: ${why}`, {
    code: 'invalid_request_state',
  });

function decode(raw: string): State {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw invalidState('not one this server issued');
  }
  const parsed = State.safeParse(value);
  if (!parsed.success) throw invalidState('not one this server issued');
  return parsed.data;
}

/** The input_required answer asking the client to decide a pending approval. */
export function approvalInputRequired(a: ApprovalRecord): InputRequiredResult {
  return {
    resultType: 'input_required',
    inputRequests: {
      [a.approval_id]: {
        method: 'elicitation/create',
        params: approvalElicitation(a),
      } as unknown as InputRequest,
    },
    requestState: encode({ v: 1, approval_id: a.approval_id, tool_call_id: a.tool_call_id }),
  };
}

/** The answer of a parked call: input_required while its approval is pending, else its card. */
export async function parkedAnswer(
  deps: { store: CallsStore & RegistryStore; calls: MeshCalls },
  project: string,
  parked: { approvalId: string; toolCallId: string; tool: Parameters<MeshCalls['follow']>[1] },
  signal: AbortSignal,
): Promise<CallToolResult | InputRequiredResult> {
  const a = await deps.store.approvals.get(project, parked.approvalId);
  if (a?.status === 'pending') return approvalInputRequired(a);
  // Decided (or expired) while the request was being answered: wait for the call as usual.
  return follow(deps, project, parked.tool, parked.toolCallId, a, signal);
}

async function follow(
  deps: { calls: MeshCalls },
  project: string,
  tool: Parameters<MeshCalls['follow']>[1],
  id: string,
  a: ApprovalRecord | undefined,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const left = a?.status === 'pending' ? a.expires_at.getTime() - Date.now() : 0;
  const done = await deps.calls.follow(project, tool, id, left, signal);
  return (
    done ??
    errorResult('timeout', `no result for ${id} in time; read it with GET /executions/${id}`, {
      tool_call_id: id,
    })
  );
}

const Answer = z.looseObject({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.unknown()).optional(),
});

/**
 * A re-sent tools/call carrying a requestState: decides the approval with the client's answer
 * and answers with the call's card (or asks again when no answer came and it is still pending).
 */
export async function resumeParked(
  deps: { store: CallsStore & RegistryStore; calls: MeshCalls; decider: ApprovalDecider },
  scope: { project: string; caller?: string | undefined },
  request: { name: string; arguments?: Record<string, unknown> | undefined },
  rawState: string,
  inputResponses: Record<string, unknown> | undefined,
  signal: AbortSignal,
): Promise<CallToolResult | InputRequiredResult> {
  const state = decode(rawState);
  const a = await deps.store.approvals.get(scope.project, state.approval_id);
  if (!a || a.tool_call_id !== state.tool_call_id) {
    throw invalidState('it names no approval of this project');
  }
  const named = request.name === CALL_TOOL ? request.arguments?.['name'] : request.name;
  if (named !== mcpToolName(a.tool_name) && named !== a.tool_name) {
    throw invalidState(`it belongs to a call of ${a.tool_name}, not of ${String(named)}`);
  }
  const tool = await deps.store.tools.get(scope.project, a.tool_name);
  if (!tool) throw invalidState(`${a.tool_name} is no longer registered`);
  const response = inputResponses?.[a.approval_id];
  if (response !== undefined) {
    const answer = Answer.safeParse(response);
    if (!answer.success) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `inputResponses["${a.approval_id}"] must be an elicitation result (action accept, decline or cancel)`,
        { code: 'invalid_input_response' },
      );
    }
    // A cancelled prompt denies here: nobody would ask this client again.
    const { action, content } = answer.data;
    await applyAnswer(
      deps.decider,
      a,
      scope.caller ?? 'mcp',
      action === 'cancel' ? { action: 'decline' } : { action, content },
    );
  } else if (a.status === 'pending') {
    return approvalInputRequired(a);
  }
  const now = await deps.store.approvals.get(scope.project, a.approval_id);
  return follow(deps, scope.project, tool, a.tool_call_id, now, signal);
}
