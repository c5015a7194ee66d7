// Stream, consumer, bucket, key and message-id names, derived from the subject root so that
// several deployments (or test runs) can share one NATS server without colliding.
import { assertId, IdKind, isValidId } from './ids.ts';
import { assertRoot, DEFAULT_ROOT } from './subjects.ts';

export interface Names {
  /**
   * The command stream of one project (`<root>_CMD_<project>`, subjects
   * `<root>.v1.<project>.*.cmd.>`): each project's commands have their own stream, so its limits
   * (stored bytes and messages) and its dedupe window are that project's alone, and one project's
   * backlog is never in front of another's.
   */
  projectCommandStream(project: string): string;
  /**
   * The one command stream of every project of releases before per-project streams; its
   * subjects overlap every project stream's, so it must go before they can be made.
   */
  readonly legacyCommandStream: string;
  /** What every project command stream's name starts with (discovery lists streams by it). */
  readonly commandStreamPrefix: string;
  /** The project of a project command stream's name; undefined for any other stream. */
  projectOfCommandStream(stream: string): string | undefined;
  readonly eventStream: string;
  readonly leaseBucket: string;
  /** The durable consumer shared by every instance of a tool service. */
  toolConsumer(target: string): string;
  /** The durable consumer of a registry tool service (every tool call; it picks its own). */
  toolServiceConsumer(service: string): string;
  /** The durable consumer shared by every agent-worker instance. */
  agentConsumer(target: string): string;
  /**
   * The durable consumer of cancel requests, shared by every tool-service instance of every
   * service: it turns each cancel into a tombstone under the call's lease key.
   */
  readonly cancelConsumer: string;
  /** Lease key of one tool call; project-scoped so projects can never block each other. */
  leaseKey(project: string, toolCallId: string): string;
  /** The queue group answering MCP refresh requests: one tools-service instance each. */
  readonly mcpDiscoveryQueue: string;
  /**
   * The ephemeral consumer of one open live feed (the api's `GET .../events`): the project's
   * tool calls off the command stream. The project is in the name so an operator listing the
   * stream's consumers sees whose feed it is; `nonce` (a NUID, made by the caller) tells two
   * feeds of a project apart.
   */
  liveFeedConsumer(project: string, nonce: string): string;
}

export function createNames(root: string = DEFAULT_ROOT): Names {
  // Unchecked, a root like `a.b` would only fail later, at the server, as a bad stream name.
  assertRoot(root);
  // Stream names keep the root's case: JetStream names are case-sensitive, so roots `cg` and
  // `CG` (whose subjects differ) must not share streams.
  return {
    projectCommandStream: (project) => `${root}_CMD_${assertId(IdKind.project, project)}`,
    commandStreamPrefix: `${root}_CMD_`,
    legacyCommandStream: `${root}_CMD`,
    projectOfCommandStream: (stream) => {
      const prefix = `${root}_CMD_`;
      if (!stream.startsWith(prefix)) return undefined;
      const project = stream.slice(prefix.length);
      return isValidId(project) ? project : undefined;
    },
    eventStream: `${root}_EVT`,
    leaseBucket: `${root}_leases`,
    toolConsumer: (target) => `${root}_tool_${assertId(IdKind.target, target)}`,
    toolServiceConsumer: (service) => `${root}_svc_${assertId(IdKind.target, service)}`,
    agentConsumer: (target) => `${root}_agent_${assertId(IdKind.target, target)}`,
    cancelConsumer: `${root}_cancels`,
    leaseKey: (project, toolCallId) =>
      `${assertId(IdKind.project, project)}.${assertId(IdKind.toolCall, toolCallId)}`,
    mcpDiscoveryQueue: `${root}_mcp_discovery`,
    liveFeedConsumer: (project, nonce) =>
      `${root}_feed_${assertId(IdKind.project, project)}_${nonce}`,
  };
}

// Nats-Msg-Id values, readable: each starts with the project, so no two projects' ids agree.
// That alone keeps no one from setting another project's id on a message of their own (JetStream
// compares the header's value only), so none goes on the wire as it is: the publisher seals it
// with its own key (`sealMsgId`, msg-id.ts; @toolmesh/stream-publish does it on every publish).
export const MsgId = {
  toolCall: (project: string, toolCallId: string) => `${project}/${toolCallId}`,
  /** A deliberate re-send of a call whose first publish was deduplicated: the tool service's
   *  lease and unique card answer it with the original result instead of running it again. */
  toolCallResend: (project: string, toolCallId: string, nonce: string) =>
    `${project}/${toolCallId}/resend/${nonce}`,
  toolResult: (project: string, toolCallId: string) => `${project}/result/${toolCallId}`,
  /** A call published again once its approval was decided (one publish per decision). */
  approvalDecided: (project: string, toolCallId: string) =>
    `${project}/${toolCallId}/approval-decided`,
  wakeup: (project: string, agent: string, correlationId: string) =>
    `${project}/wakeup/${agent}/${correlationId}`,
} as const;
