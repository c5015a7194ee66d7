-- Per-project NATS credentials for external publishers (POST /v1/projects/:p/bus-credentials).
-- Only the metadata is kept: the user's seed is shown once and never stored. A revoked row's
-- public key goes into the NATS account's revocation list, which the api rebuilds from this table
-- and pushes to the server (also at start, so a server that lost the update gets it again).
CREATE TABLE resource.bus_credentials (
  credential_id uuid PRIMARY KEY,
  -- No cascade: a revoked row is the revocation itself, so it must outlive nothing it guards.
  project_id    text NOT NULL REFERENCES resource.projects,
  name          text NOT NULL,
  public_key    text NOT NULL UNIQUE CHECK (public_key ~ '^U[A-Z2-7]{55}$'),
  inbox_prefix  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);

CREATE INDEX bus_credentials_project ON resource.bus_credentials (project_id, created_at);
CREATE INDEX bus_credentials_revoked ON resource.bus_credentials (revoked_at)
  WHERE revoked_at IS NOT NULL;
