// Skills: upload a zip (multipart), list, get with versions, activate a version, enable or
// disable, delete. Every upload check lives in packages/skills, so the skills service reads the
// same packages the same way; the zip goes to the artifact store under its sha256 version.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { skillZipKey } from '@toolmesh/artifacts';
import {
  inspectSkillZip,
  skillLocation,
  skillPackageErrorCodeOf,
  type SkillPackageError,
} from '@toolmesh/skills';
import type { SkillEnvRecord, SkillRecord, SkillsStore, SkillVersion } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits');
const SkillOut = z
  .object({
    name: z.string(),
    description: z.string(),
    active_version: z.string().nullable(),
    enabled: z.boolean(),
    versions: z.number().int(),
    location: z.string().describe('where the skill is placed in a sandbox workdir'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Skill' });
const EnvironmentOut = z
  .object({
    provider: z.enum(['local', 'e2b']),
    status: z.enum(['building', 'ready', 'failed']),
    kinds: z.array(z.string()).describe('python (a venv) and/or node (node_modules)'),
    builds: z
      .number()
      .int()
      .describe('how many times it was built (a retry after a failure counts)'),
    started_at: z.string(),
    finished_at: z.string().nullable(),
    error: z.record(z.string(), z.unknown()).nullable(),
    output_tail: z.string().describe("the last bytes of the installer's output"),
  })
  .meta({ id: 'SkillEnvironment' });
const VersionOut = z
  .object({
    version: Sha256,
    size_bytes: z.number(),
    files: z.number().int(),
    description: z.string(),
    front_matter: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    environments: z
      .array(EnvironmentOut)
      .describe(
        "this version's dependency environments, one per sandbox provider that built one (empty when it has no dependencies or none was built yet)",
      ),
  })
  .meta({ id: 'SkillVersion' });

const skillOut = (s: SkillRecord) => ({
  name: s.name,
  description: s.description,
  active_version: s.active_version,
  enabled: s.enabled,
  versions: s.versions,
  location: skillLocation(s.name),
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});
const environmentOut = (e: SkillEnvRecord) => ({
  provider: e.provider,
  status: e.status,
  kinds: e.kinds,
  builds: e.builds,
  started_at: e.started_at.toISOString(),
  finished_at: e.finished_at?.toISOString() ?? null,
  error: e.error,
  output_tail: e.output_tail,
});
const versionOut = (v: SkillVersion, envs: readonly SkillEnvRecord[] = []) => ({
  version: v.version,
  size_bytes: v.size_bytes,
  files: v.files,
  description: v.description,
  front_matter: v.front_matter,
  created_at: v.created_at.toISOString(),
  environments: envs.filter((e) => e.version === v.version).map(environmentOut),
});

/** Size checks answer 413, every other refusal of the package 400; each keeps its own code. */
function uploadError(err: SkillPackageError): ApiError {
  const tooLarge = [
    'zip_too_large',
    'too_many_entries',
    'uncompressed_too_large',
    'skill_md_too_large',
  ];
  return new ApiError(
    { code: err.code, status: tooLarge.includes(err.code) ? 413 : 400 },
    err.message,
    err.details,
  );
}

const SkillParams = ProjectParams.extend({ name: Id });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const skillRoutes =
  ({ store, auth, artifacts, config }: RouteDeps<SkillsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/projects/:project/skills',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          summary:
            'Upload a skill zip (multipart field `file`; optional field `activate`, default true)',
          consumes: ['multipart/form-data'],
          params: ProjectParams,
          response: {
            201: z.object({ skill: SkillOut, version: VersionOut, created: z.boolean() }),
            413: ErrorResponse,
            415: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req, reply) => {
        if (!req.isMultipart())
          throw new ApiError(
            'unsupported_media_type',
            'upload the zip as multipart/form-data, field `file`',
          );
        const part = await req.file();
        if (!part || part.fieldname !== 'file')
          throw new ApiError(
            'invalid_upload',
            'the multipart body needs a `file` field holding the zip',
          );
        const data = await part.toBuffer();
        const activateField = part.fields['activate'];
        const activateValue =
          activateField && 'value' in activateField ? String(activateField.value) : 'true';
        if (!['true', 'false'].includes(activateValue))
          throw new ApiError('invalid_upload', '`activate` must be true or false');
        let pkg;
        try {
          pkg = await inspectSkillZip(data, {
            maxZipBytes: config.skills.max_zip_bytes,
            maxEntries: config.skills.max_entries,
            maxUncompressedBytes: config.skills.max_uncompressed_bytes,
          });
        } catch (err) {
          if (skillPackageErrorCodeOf(err)) throw uploadError(err as SkillPackageError);
          throw err;
        }
        const put = await artifacts.put(
          skillZipKey(req.params.project, pkg.name, pkg.sha256),
          data,
          {
            contentType: 'application/zip',
          },
        );
        const { skill, created } = await store.skills.addVersion(req.params.project, {
          name: pkg.name,
          description: pkg.description,
          version: pkg.sha256,
          storageUri: put.uri,
          sizeBytes: pkg.sizeBytes,
          frontMatter: pkg.frontMatter,
          files: pkg.files.length,
          activate: activateValue === 'true',
        });
        const version = (await store.skills.versions(skill.skill_id)).find(
          (v) => v.version === pkg.sha256,
        )!;
        return reply
          .status(201)
          .send({ skill: skillOut(skill), version: versionOut(version), created });
      },
    );

    app.get(
      '/projects/:project/skills',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          params: ProjectParams,
          response: { 200: z.object({ skills: z.array(SkillOut) }), ...errors },
        },
      },
      async (req) => ({ skills: (await store.skills.list(req.params.project)).map(skillOut) }),
    );

    app.get(
      '/projects/:project/skills/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          params: SkillParams,
          response: { 200: SkillOut.extend({ version_list: z.array(VersionOut) }), ...errors },
        },
      },
      async (req) => {
        const skill = await store.skills.get(req.params.project, req.params.name);
        if (!skill) throw notFound('skill', req.params.name);
        const envs = await store.skillEnvs.listForSkill(req.params.project, skill.name);
        return {
          ...skillOut(skill),
          version_list: (await store.skills.versions(skill.skill_id)).map((v) =>
            versionOut(v, envs),
          ),
        };
      },
    );

    app.post(
      '/projects/:project/skills/:name/activate',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          summary: 'Make a version the active one',
          params: SkillParams,
          body: z.strictObject({ version: Sha256 }),
          response: { 200: SkillOut, ...errors },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        if (!(await store.skills.get(project, name))) throw notFound('skill', name);
        if (!(await store.skills.activate(project, name, req.body.version)))
          throw notFound('version', req.body.version);
        return skillOut((await store.skills.get(project, name))!);
      },
    );

    app.patch(
      '/projects/:project/skills/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          summary: 'Enable or disable a skill',
          params: SkillParams,
          body: z.strictObject({ enabled: z.boolean() }),
          response: { 200: SkillOut, ...errors },
        },
      },
      async (req) => {
        const skill = await store.skills.setEnabled(
          req.params.project,
          req.params.name,
          req.body.enabled,
        );
        if (!skill) throw notFound('skill', req.params.name);
        return skillOut(skill);
      },
    );

    app.delete(
      '/projects/:project/skills/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['skills'],
          summary: 'Delete a skill and every version',
          params: SkillParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const versions = await store.skills.delete(req.params.project, req.params.name);
        if (!versions) throw notFound('skill', req.params.name);
        for (const v of versions) {
          // The rows are gone; a zip left behind is only storage, so a failure is logged, not fatal.
          await artifacts
            .delete(skillZipKey(req.params.project, req.params.name, v.version))
            .catch((err: unknown) =>
              req.log.warn({ err, version: v.version }, 'could not delete a skill zip'),
            );
        }
        return reply.status(204).send(null);
      },
    );
  };
