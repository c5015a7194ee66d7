-- Upstream OAuth 2.0 access tokens of the tools service, shared by every instance: one row per
-- project and token configuration (cache_key: a hash of the grant, the secret names, scope and
-- audience; never a secret value). The token is sealed like a project secret (AES-256-GCM under
-- [secrets] key, the project and `oauth:<cache_key>` bound in as associated data), so a row
-- copied to another project or key does not open. expires_at is the database's clock (NULL: the
-- token endpoint gave no expires_in); version goes up with every write, so an instance that
-- waited for the fetch lock can tell that another one fetched meanwhile.
CREATE TABLE state.oauth_tokens (
  project_id text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  cache_key  text NOT NULL CHECK (cache_key ~ '^[0-9a-f]{64}$'),
  ciphertext bytea NOT NULL,
  iv         bytea NOT NULL,
  tag        bytea NOT NULL,
  expires_at timestamptz,
  version    bigint NOT NULL DEFAULT 1,
  fetched_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, cache_key)
);
