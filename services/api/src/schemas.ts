// Schemas shared by the route groups: ids, paths, pagination.
import { z } from 'zod';
import { ID_PATTERN } from '@toolmesh/protocol';

export const Id = z.string().regex(ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9_-]');
export const Uuid = z.uuid();
export const ProjectParams = z.strictObject({ project: Id });
export const ToolName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_-]{1,64}$/, 'must be <target>.<tool>');

export const Limit = z.coerce.number().int().min(1).max(500).default(50);
export const Timestamp = z.iso.datetime({ offset: true });

/** Dates leave the api as ISO strings. */
export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
