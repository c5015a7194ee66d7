// Sealed Nats-Msg-Ids. JetStream deduplicates by the header's value alone, per stream, and
// cannot check a header against its publisher: every project's callers share the command
// stream, and anyone may set any Nats-Msg-Id on what they publish. A readable id (`MsgId`,
// names.ts) such as `<project>/<tool_call_id>` could therefore be published first by another
// project, on its own subject, and the victim's call would be answered `duplicate` and never
// run. So what goes on the wire is the readable id followed by a MAC of it under the
// publisher's key (`<id>/<mac>`): only a holder of that key can produce it, a retry by the same
// publisher still produces the same id, and the readable part (which starts with the project)
// keeps the id legible in `nats stream view`.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { isValidToolCallId } from './ids.ts';

/** Characters of MAC kept: 22 of base64url, 128 bits. */
const MAC_CHARS = 22;
/** Domain separation: the key seals nothing but Nats-Msg-Ids, whatever secret it came from. */
const LABEL = 'toolmesh nats-msg-id v1';

/** A publisher's key for Nats-Msg-Ids (opaque: it never leaves the process). */
export interface MsgIdKey {
  readonly kind: 'msg-id-key';
  /** @internal */
  readonly key: KeyObject;
}

/**
 * The key derived from a secret only this publisher holds (a service: the seed of its NATS
 * credential, shared by every instance of the service, so their ids agree).
 */
export function msgIdKeyOf(secret: string | Uint8Array): MsgIdKey {
  const derived = createHmac('sha256', secret).update(LABEL).digest();
  return { kind: 'msg-id-key', key: createSecretKey(derived) };
}

/** A fresh random key: a publisher with no secret of its own (one connection's lifetime). */
export function randomMsgIdKey(): MsgIdKey {
  return msgIdKeyOf(randomBytes(32));
}

/**
 * The id as it goes on the wire: `<id>/<mac>`, the MAC an HMAC-SHA256 of the whole readable id
 * (so of its project too), truncated to 128 bits. A few microseconds per publish.
 */
export function sealMsgId(key: MsgIdKey, id: string): string {
  const mac = createHmac('sha256', key.key).update(id).digest('base64url');
  return `${id}/${mac.slice(0, MAC_CHARS)}`;
}

/**
 * The tool_call_id a call's Nats-Msg-Id names: the first segment after a leading `<project>/`
 * (`demo/call-1/<mac>` gives `call-1`), or the whole id without that prefix, when valid. The
 * last-resort name of a call whose body and CG-Tool-Call-Id are unusable (protocol 9.2).
 */
export function toolCallIdOfMsgId(project: string, msgId: string | undefined): string | undefined {
  if (msgId === undefined) return undefined;
  const prefix = `${project}/`;
  const id = msgId.startsWith(prefix) ? msgId.slice(prefix.length).split('/', 1)[0] : msgId;
  return isValidToolCallId(id) ? id : undefined;
}
