// Moving files across the sandbox boundary: input artifacts copied in before a command, output
// files collected after it and stored as artifacts (and recorded in resource.artifacts).
import { randomUUID } from 'node:crypto';
import { basename, extname } from 'node:path';
import { artifactKey, sanitizeFilename } from '@toolmesh/artifacts';
import { ToolError } from '@toolmesh/protocol';
import { isSandboxError, type Sandbox } from '@toolmesh/sandbox';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';

const MIME: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
};

export interface OutputArtifact {
  path: string;
  artifact_id: string;
  filename: string;
  mime: string;
  size_bytes: number;
  sha256: string;
}

export interface OutputError {
  path: string;
  code: 'missing' | 'too_large' | 'not_a_file' | 'escapes_workdir';
  message: string;
}

async function readAll(s: NodeJS.ReadableStream, max: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of s) {
    const b = Buffer.isBuffer(c) ? c : Buffer.from(c);
    size += b.length;
    if (size > max)
      throw new ToolError(`${what} is larger than the limit of ${max} bytes`, {
        details: { limit_bytes: max },
      });
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

export async function copyInputs(
  deps: SkillsDeps<SkillsStore>,
  sandbox: Sandbox,
  project: string,
  inputs: readonly { artifact_id: string; path: string }[],
  base: string,
): Promise<void> {
  for (const input of inputs) {
    const record = await deps.store.artifacts.get(project, input.artifact_id);
    if (!record) {
      throw new ToolError(`input artifact ${input.artifact_id} not found in this project`, {
        details: { artifact_id: input.artifact_id },
      });
    }
    const stream = await deps.artifacts.get(
      artifactKey(project, record.artifact_id, record.filename),
    );
    const data = await readAll(
      stream,
      deps.limits.maxInputBytes,
      `input artifact ${input.artifact_id}`,
    );
    await sandbox.putFile(base ? `${base}/${input.path}` : input.path, data);
  }
}

export async function collectOutputs(
  deps: SkillsDeps<SkillsStore>,
  sandbox: Sandbox,
  project: string,
  toolCallId: string,
  outputs: readonly string[],
  base: string,
): Promise<{ artifacts: OutputArtifact[]; errors: OutputError[] }> {
  const artifacts: OutputArtifact[] = [];
  const errors: OutputError[] = [];
  for (const path of outputs) {
    let data: Buffer;
    try {
      // Refused by its size before a byte is read: a huge file listed many times costs nothing.
      data = await sandbox.getFile(base ? `${base}/${path}` : path, {
        maxBytes: deps.limits.maxOutputBytes,
      });
    } catch (err) {
      if (isSandboxError(err, 'too_large')) {
        errors.push({ path, code: 'too_large', message: `${path}: ${err.message}` });
      } else if (isSandboxError(err, 'path_escape')) {
        // A symlink the command left, pointing out of the workdir: never followed.
        errors.push({
          path,
          code: 'escapes_workdir',
          message: `${path} leads outside the workdir`,
        });
      } else if ((err as { code?: string }).code === 'EISDIR') {
        errors.push({ path, code: 'not_a_file', message: `${path} is a folder, not a file` });
      } else if (isSandboxError(err, 'not_found') || (err as { code?: string }).code === 'ENOENT') {
        errors.push({ path, code: 'missing', message: `${path} was not written by the command` });
      } else {
        throw err;
      }
      continue;
    }
    if (data.length > deps.limits.maxOutputBytes) {
      errors.push({
        path,
        code: 'too_large',
        message: `${path} is ${data.length} bytes, over the limit of ${deps.limits.maxOutputBytes}`,
      });
      continue;
    }
    const artifactId = randomUUID();
    const filename = sanitizeFilename(basename(path));
    const mime = MIME[extname(filename).toLowerCase()] ?? 'application/octet-stream';
    const put = await deps.artifacts.put(artifactKey(project, artifactId, filename), data, {
      contentType: mime,
    });
    await deps.store.artifacts.insert({
      artifact_id: artifactId,
      project_id: project,
      filename,
      mime,
      size_bytes: put.size,
      sha256: put.sha256,
      storage_uri: put.uri,
      tool_call_id: toolCallId,
    });
    artifacts.push({
      path,
      artifact_id: artifactId,
      filename,
      mime,
      size_bytes: put.size,
      sha256: put.sha256,
    });
  }
  return { artifacts, errors };
}
