-- Skill environments: a skill version's dependencies (requirements.txt, pyproject.toml
-- [project].dependencies, package.json dependencies) installed once per version and sandbox
-- provider. The row is the build's durable job: the first request inserts it `building` and
-- owns the build; every other request, on any instance, waits on the row. An owner renews
-- `lease_until` while it builds; a `building` row past its lease (a dead owner) is taken over
-- by the next request. A `failed` row keeps the installer's output tail; the next request after
-- a failure builds again.
CREATE TABLE state.skill_envs (
  project_id     text NOT NULL,
  skill_name     text NOT NULL,
  version        text NOT NULL CHECK (version ~ '^[0-9a-f]{64}$'),
  provider       text NOT NULL CHECK (provider IN ('local', 'e2b')),
  status         text NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
  -- What is installed: any of 'python', 'node'.
  kinds          text[] NOT NULL,
  owner_instance text NOT NULL,
  lease_until    timestamptz NOT NULL,
  -- Where the environment lives (local: the host folder mounted read-only into sessions; e2b:
  -- the workdir-relative folder each sandbox installs into).
  location       text,
  -- The sandbox holding a local environment's files (kept while the environment is in use).
  sandbox_id     text,
  -- The last bytes of the installer's stdout and stderr.
  output_tail    text NOT NULL DEFAULT '',
  error          jsonb,
  builds         integer NOT NULL DEFAULT 1,
  started_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, skill_name, version, provider)
);
