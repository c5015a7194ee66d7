-- Callers and keys. An execution keeps the context its caller gave it (a session id to group
-- calls by, and a small metadata object) and who started it: the API key of a call made over
-- HTTP, or the bus credential a publisher named. A task keeps the key that started it, so a
-- `caller` key sees the executions of its own tasks too. API keys get a role, and each key (and
-- the deployment's admin key) has a token bucket of requests shared by every api instance.
ALTER TABLE state.tool_executions
  ADD COLUMN session_id       text,
  ADD COLUMN context_metadata jsonb,
  -- No foreign keys: the log outlives revoked keys and credentials, and is kept by age alone.
  ADD COLUMN key_id           uuid,
  ADD COLUMN credential_id    uuid;
CREATE INDEX tool_executions_session
  ON state.tool_executions (project_id, session_id, started_at DESC)
  WHERE session_id IS NOT NULL;
CREATE INDEX tool_executions_key
  ON state.tool_executions (project_id, key_id, started_at DESC)
  WHERE key_id IS NOT NULL;

ALTER TABLE state.tasks ADD COLUMN key_id uuid;
CREATE INDEX tasks_key ON state.tasks (project_id, key_id) WHERE key_id IS NOT NULL;

-- Keys made before roles existed could do everything in their project: they stay `admin`.
ALTER TABLE resource.api_keys
  ADD COLUMN role text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'caller'));

-- One bucket per API key (`key:<key_id>`) and one for the deployment's admin key (`admin`).
-- Unlogged: a take writes no WAL, so a request never waits on a WAL flush for it; after a
-- database crash the buckets start full again, which a rate limit can afford.
CREATE UNLOGGED TABLE state.api_rate_buckets (
  bucket      text PRIMARY KEY,
  tokens      double precision NOT NULL,
  refilled_at timestamptz NOT NULL
);

-- Takes up to p_want tokens at once (an api instance spends a batch in memory, so a busy key
-- costs one statement per batch, not per request): the number taken, and when none could be,
-- the seconds until one will be there. The row lock serializes concurrent takes from every api
-- instance, and the database's clock is the one clock. Tokens are taken before they are spent,
-- so batches never let a key past its limit; unspent ones expire in the instance that took them.
CREATE FUNCTION state.take_api_tokens(
  p_bucket text, p_per_sec double precision, p_burst double precision, p_want integer,
  OUT taken integer, OUT wait double precision
) LANGUAGE plpgsql AS $$
DECLARE
  now_ts timestamptz := clock_timestamp();
  cur double precision;
BEGIN
  INSERT INTO state.api_rate_buckets AS b (bucket, tokens, refilled_at)
  VALUES (p_bucket, p_burst, now_ts)
  ON CONFLICT (bucket) DO UPDATE
    SET tokens = least(p_burst,
                       b.tokens + greatest(0, extract(epoch FROM now_ts - b.refilled_at)) * p_per_sec),
        refilled_at = greatest(b.refilled_at, now_ts)
  RETURNING tokens INTO cur;
  IF cur >= 1 THEN
    taken := least(p_want, floor(cur))::integer;
    wait := 0;
    UPDATE state.api_rate_buckets SET tokens = cur - taken WHERE bucket = p_bucket;
  ELSE
    taken := 0;
    wait := (1 - cur) / p_per_sec;
  END IF;
END $$;
