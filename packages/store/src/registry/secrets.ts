// Project secrets (resource.secrets): write-only values sealed with AES-256-GCM under the key of
// the configuration ([secrets] key). The repository stores and returns sealed values only; the
// box seals and opens them, so the key never reaches the database and plaintext never leaves
// the process that asked for it. Each seal has a fresh 12-byte iv; the project and name are the
// associated data, so a ciphertext copied to another project or name does not open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { MeshError } from '@toolmesh/protocol';
import type { Db } from '../core/db.ts';

export interface SealedSecret {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
}

export interface SecretListing {
  name: string;
  created_at: Date;
  updated_at: Date;
}

export interface SecretsRepo {
  /** Creates or replaces; true when it was created. */
  put(projectId: string, name: string, sealed: SealedSecret): Promise<boolean>;
  get(projectId: string, name: string): Promise<SealedSecret | undefined>;
  list(projectId: string): Promise<SecretListing[]>;
  delete(projectId: string, name: string): Promise<boolean>;
}

export interface SecretBox {
  seal(projectId: string, name: string, value: string): SealedSecret;
  open(projectId: string, name: string, sealed: SealedSecret): string;
}

/** The error when secrets are used but no key is configured, or a ciphertext does not open. */
export class SecretsKeyError extends MeshError {
  constructor(message: string, cause?: unknown) {
    super('secret_unavailable', message, cause === undefined ? {} : { cause });
  }
}

const aad = (projectId: string, name: string) => Buffer.from(`${projectId}\u0000${name}`, 'utf8');

/** A box over the base64 key of the configuration; an empty key refuses every use clearly. */
export function createSecretBox(keyBase64: string): SecretBox {
  const key = keyBase64 === '' ? undefined : Buffer.from(keyBase64, 'base64');
  const need = (): Buffer => {
    if (!key || key.length !== 32) {
      throw new SecretsKeyError(
        'project secrets need [secrets] key (CG__SECRETS__KEY): the base64 of 32 random bytes',
      );
    }
    return key;
  };
  return {
    seal: (projectId, name, value) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', need(), iv);
      cipher.setAAD(aad(projectId, name));
      const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
      return { ciphertext, iv, tag: cipher.getAuthTag() };
    },
    open: (projectId, name, sealed) => {
      const decipher = createDecipheriv('aes-256-gcm', need(), sealed.iv);
      decipher.setAAD(aad(projectId, name));
      decipher.setAuthTag(sealed.tag);
      try {
        return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString(
          'utf8',
        );
      } catch (err) {
        throw new SecretsKeyError(
          `secret ${JSON.stringify(name)} does not open with the configured key (was the key changed?)`,
          err,
        );
      }
    },
  };
}

export function createSecretsRepo(db: Db): SecretsRepo {
  return {
    put: async (projectId, name, s) =>
      (
        await db.query<{ created: boolean }>(
          'secrets_put',
          `INSERT INTO resource.secrets (project_id, name, ciphertext, iv, tag)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (project_id, name) DO UPDATE
             SET ciphertext = EXCLUDED.ciphertext, iv = EXCLUDED.iv, tag = EXCLUDED.tag,
                 updated_at = now()
           RETURNING (xmax = 0) AS created`,
          [projectId, name, s.ciphertext, s.iv, s.tag],
        )
      )[0]?.created ?? false,
    get: async (projectId, name) =>
      (
        await db.query<SealedSecret>(
          'secrets_get',
          `SELECT ciphertext, iv, tag FROM resource.secrets WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    list: (projectId) =>
      db.query<SecretListing>(
        'secrets_list',
        `SELECT name, created_at, updated_at FROM resource.secrets
         WHERE project_id = $1 ORDER BY name`,
        [projectId],
      ),
    delete: async (projectId, name) =>
      (
        await db.query(
          'secrets_delete',
          'DELETE FROM resource.secrets WHERE project_id = $1 AND name = $2 RETURNING name',
          [projectId, name],
        )
      ).length === 1,
  };
}
