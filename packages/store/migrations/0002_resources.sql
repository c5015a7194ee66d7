-- Resources managed through the api: projects and their keys, the tool registry, skills and
-- their versions, profiles, agents with their tools, artifacts; and agent tasks. An execution
-- published over HTTP is recorded as `queued` before any tool service has seen it.

CREATE SCHEMA IF NOT EXISTS resource;

CREATE TABLE resource.projects (
  project_id text PRIMARY KEY CHECK (project_id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Only a hash of each key is kept; the key itself is shown once, when it is created.
CREATE TABLE resource.api_keys (
  key_id       uuid PRIMARY KEY,
  project_id   text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name         text NOT NULL,
  key_hash     text NOT NULL UNIQUE,
  key_prefix   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX api_keys_project ON resource.api_keys (project_id);

CREATE TABLE resource.tools (
  tool_id     uuid PRIMARY KEY,
  project_id  text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name        text NOT NULL,
  target      text NOT NULL,
  description text NOT NULL DEFAULT '',
  category    text NOT NULL DEFAULT 'general',
  tags        text[] NOT NULL DEFAULT '{}',
  parameters  jsonb NOT NULL,
  origin      text NOT NULL CHECK (origin IN ('skills', 'builtin', 'external')),
  options     jsonb NOT NULL DEFAULT '{}'::jsonb,
  enabled     boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);
CREATE INDEX tools_project_category ON resource.tools (project_id, category);

CREATE TABLE resource.skills (
  skill_id       uuid PRIMARY KEY,
  project_id     text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name           text NOT NULL,
  description    text NOT NULL,
  active_version text,
  enabled        boolean NOT NULL DEFAULT true,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

CREATE TABLE resource.skill_versions (
  skill_id     uuid NOT NULL REFERENCES resource.skills ON DELETE CASCADE,
  version      text NOT NULL CHECK (version ~ '^[0-9a-f]{64}$'),
  storage_uri  text NOT NULL,
  size_bytes   bigint NOT NULL,
  description  text NOT NULL,
  front_matter jsonb NOT NULL,
  files        integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (skill_id, version)
);

CREATE TABLE resource.profiles (
  profile_id             uuid PRIMARY KEY,
  project_id             text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name                   text NOT NULL,
  allowed_tools          text[] NOT NULL DEFAULT '{}',
  allowed_internal_tools text[] NOT NULL DEFAULT '{}',
  model                  text,
  system_prompt          text NOT NULL DEFAULT '',
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

CREATE TABLE resource.agents (
  project_id text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  agent_id   text NOT NULL CHECK (agent_id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name       text NOT NULL,
  profile_id uuid REFERENCES resource.profiles ON DELETE RESTRICT,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, agent_id)
);

CREATE TABLE resource.agent_tools (
  project_id text NOT NULL,
  agent_id   text NOT NULL,
  tool_id    uuid NOT NULL REFERENCES resource.tools ON DELETE CASCADE,
  config     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, agent_id, tool_id),
  FOREIGN KEY (project_id, agent_id) REFERENCES resource.agents ON DELETE CASCADE
);

CREATE TABLE resource.artifacts (
  artifact_id  uuid PRIMARY KEY,
  project_id   text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  filename     text NOT NULL,
  mime         text NOT NULL,
  size_bytes   bigint NOT NULL,
  sha256       text NOT NULL,
  storage_uri  text NOT NULL,
  tool_call_id text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX artifacts_project ON resource.artifacts (project_id, created_at);

CREATE TABLE state.tasks (
  task_id       uuid PRIMARY KEY,
  project_id    text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  agent_id      text NOT NULL,
  channel       text NOT NULL,
  input         jsonb NOT NULL,
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'canceled')),
  final_card_id uuid,
  error         jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (project_id, agent_id) REFERENCES resource.agents ON DELETE CASCADE
);
CREATE INDEX tasks_agent ON state.tasks (project_id, agent_id, created_at);

ALTER TABLE state.tool_executions DROP CONSTRAINT tool_executions_status_check;
ALTER TABLE state.tool_executions ADD CONSTRAINT tool_executions_status_check
  CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timeout', 'canceled'));
CREATE INDEX tool_executions_active ON state.tool_executions (project_id)
  WHERE status IN ('queued', 'running');
DROP INDEX state.tool_executions_running;
CREATE INDEX tool_executions_project_tool ON state.tool_executions (project_id, tool_name, started_at);
