// What an `internal_error` card may say. Such a message is built from whatever a handler or a
// driver threw, and those quote the host: file paths (a module's location, the checkout, the
// artifact root, a sandbox's folder), sometimes a connection URL. A card is read by the tenant
// (and by its model), so host paths become `<path>` and URL credentials are masked. Applied in
// one place, where every result becomes a card; other codes carry what the tool chose to say.
import { redactUrls } from '@toolmesh/config';
import type { ToolResultContent } from '@toolmesh/protocol';

export const HOST_PATH = '<path>';

/**
 * An absolute path of two or more segments (`/work/x/.data/admin_key`, `file:///srv/a.js`), not
 * a URL's path (preceded by a host) nor a relative one (`a/b`). A single segment (`/tmp`) names
 * nothing of this host in particular and stays readable.
 */
const ABSOLUTE_PATH = /(?<![\w.~/:-])(?:file:\/\/)?\/(?:[^\s/'"`()<>,;:]+\/)+[^\s/'"`()<>,;:]*/g;

/** The text with host paths replaced and URL credentials masked. */
export function scrubHostPaths(text: string): string {
  return redactUrls(text).replace(ABSOLUTE_PATH, HOST_PATH);
}

function scrubValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubHostPaths(value);
  if (depth > 6 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => scrubValue(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubValue(v, depth + 1)]));
}

/** The content, with the message and details of an `internal_error` scrubbed of host details. */
export function sanitizeResult(content: ToolResultContent): ToolResultContent {
  const error = content.error;
  if (!error || error.code !== 'internal_error') return content;
  return {
    ...content,
    error: {
      ...error,
      message: scrubHostPaths(error.message),
      ...(error.details
        ? { details: scrubValue(error.details, 0) as Record<string, unknown> }
        : {}),
    },
  };
}
