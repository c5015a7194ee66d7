// Artifacts as MCP resources. A result that names artifacts (skills.run_cmd's `artifacts`) gets a
// `resource_link` per artifact, `toolmesh://artifacts/<artifact_id>`; `resources/read` of that URI
// in a session of the artifact's project returns its bytes (a blob with its MIME type; text types
// as text). The URI names no project: a link read in another project's session is not found.
import type { ArtifactStore } from '@toolmesh/artifacts';
import { artifactKey } from '@toolmesh/artifacts';
import type { SkillsStore } from '@toolmesh/store';
import {
  ErrorCode,
  McpError,
  type ReadResourceResult,
  type ResourceLink,
} from '@modelcontextprotocol/sdk/types.js';

const SCHEME = 'toolmesh://artifacts/';
/** resources/read answers in one JSON-RPC message: larger artifacts are for the HTTP route. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const artifactUri = (artifactId: string) => `${SCHEME}${artifactId}`;

interface ArtifactRef {
  artifact_id: string;
  filename?: string;
  mime?: string;
  size_bytes?: number;
}

const isRef = (v: unknown): v is ArtifactRef =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as { artifact_id?: unknown }).artifact_id === 'string' &&
  UUID.test((v as { artifact_id: string }).artifact_id);

/** Resource links for the artifacts a result names (its top-level `artifacts` list). */
export function artifactLinks(result: unknown): ResourceLink[] {
  const list = (result as { artifacts?: unknown } | null)?.artifacts;
  if (!Array.isArray(list)) return [];
  return list.filter(isRef).map((a) => ({
    type: 'resource_link',
    uri: artifactUri(a.artifact_id),
    name: a.filename ?? a.artifact_id,
    ...(a.mime ? { mimeType: a.mime } : {}),
    ...(typeof a.size_bytes === 'number' ? { size: a.size_bytes } : {}),
  }));
}

export async function readArtifact(
  deps: { store: SkillsStore; artifacts: ArtifactStore },
  project: string,
  uri: string,
): Promise<ReadResourceResult> {
  const id = uri.startsWith(SCHEME) ? uri.slice(SCHEME.length) : '';
  const notFound = () => new McpError(ErrorCode.InvalidParams, `Resource not found: ${uri}`);
  if (!UUID.test(id)) throw notFound();
  const a = await deps.store.artifacts.get(project, id);
  if (!a) throw notFound();
  if (a.size_bytes > MAX_READ_BYTES) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `artifact ${id} has ${a.size_bytes} bytes, more than ${MAX_READ_BYTES}: download it from /v1/projects/${project}/artifacts/${id}/content`,
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of await deps.artifacts.get(artifactKey(project, id, a.filename))) {
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  const bytes = Buffer.concat(chunks);
  const text = a.mime.startsWith('text/') || a.mime === 'application/json';
  return {
    contents: [
      text
        ? { uri, mimeType: a.mime, text: bytes.toString('utf8') }
        : { uri, mimeType: a.mime, blob: bytes.toString('base64') },
    ],
  };
}
