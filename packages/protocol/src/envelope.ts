// The tool-call envelope, built in one place: the subject, headers, Nats-Msg-Id and body with
// which a call goes onto its project's command stream. Every publisher of a call goes through
// here (the SDK, and so the api, the scheduler and the CLI; the agent worker; the approval
// re-dispatch of the api and of the tool services), so what a tool service reads (intake.ts)
// and what the NATS permissions allow (`Subjects` filters) agree with what is sent.
//
// `msgID` is the readable id (`MsgId`, names.ts); the publisher seals it with its key on the way
// out (@toolmesh/stream-publish). `traceparent` is the transport's: the bus and the SDK add the
// current span's to every message they publish, so it is not part of the envelope.
import { encodeMessage } from './codec.ts';
import { Header } from './headers.ts';
import { assertId, IdKind } from './ids.ts';
import type { ToolCallInput } from './messages.ts';
import { MsgId } from './names.ts';
import { splitToolName, type Scope, type Subjects } from './subjects.ts';

export interface Envelope {
  subject: string;
  headers: Record<string, string>;
  /** The readable Nats-Msg-Id; sealed by the publisher (`sealMsgId`). */
  msgID: string;
  data: Uint8Array;
}

/**
 * The agent turn a call belongs to: its result wakes that agent, fenced by the epoch. Each part
 * is sent when given (a call may name its turn for the history without asking for a wakeup).
 */
export interface CallTurn {
  agentId?: string | undefined;
  turnId?: string | undefined;
  turnEpoch?: number | undefined;
}

export interface ToolCallEnvelopeInput extends Scope {
  /** The call's body (`v` is set here). */
  call: Omit<ToolCallInput, 'v'>;
  turn?: CallTurn | undefined;
  /** The bus credential (its id) the publisher connected with, when it is a project's. */
  credentialId?: string | undefined;
  /**
   * A deliberate re-send of a call whose first publish was deduplicated (a fresh nonce): the
   * tool service answers a known id with its original result instead of running it again.
   */
  resendNonce?: string | undefined;
}

/** A tool call as it goes on the bus; throws `invalid_id`/`invalid_message` on a bad input. */
export function toolCallEnvelope(subjects: Subjects, input: ToolCallEnvelopeInput): Envelope {
  const { project, channel, call, turn } = input;
  const toolCallId = assertId(IdKind.toolCall, call.tool_call_id);
  const { target, tool } = splitToolName(call.tool_name);
  const subject = subjects.toolCall({ project, channel, target, tool });
  const data = encodeMessage('tool_call', { v: 1, ...call });
  const headers: Record<string, string> = { [Header.toolCallId]: toolCallId };
  if (input.credentialId !== undefined) headers[Header.credentialId] = input.credentialId;
  if (turn !== undefined) {
    if (turn.agentId !== undefined) headers[Header.agentId] = assertId(IdKind.agent, turn.agentId);
    if (turn.turnId !== undefined) headers[Header.turnId] = turn.turnId;
    if (turn.turnEpoch !== undefined) headers[Header.turnEpoch] = String(turn.turnEpoch);
  }
  const msgID =
    input.resendNonce === undefined
      ? MsgId.toolCall(project, toolCallId)
      : MsgId.toolCallResend(project, toolCallId, input.resendNonce);
  return { subject, headers, msgID, data };
}

/** A call parked for approval, as it was received, with the headers it must keep. */
export interface ParkedCall {
  project_id: string;
  tool_call_id: string;
  approval_id: string;
  subject: string;
  body: Uint8Array;
  headers: Record<string, string>;
}

/**
 * A call published again once its approval was decided: the message it came as, marked with the
 * approval to read, under one Nats-Msg-Id per decision.
 */
export function decidedCallEnvelope(a: ParkedCall): Envelope {
  return {
    subject: a.subject,
    headers: { ...a.headers, [Header.approvalId]: a.approval_id },
    msgID: MsgId.approvalDecided(a.project_id, a.tool_call_id),
    data: new Uint8Array(a.body),
  };
}
