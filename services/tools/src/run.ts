// One call of a registry tool through its policies: take a rate-limit token (waiting up to
// max_wait_ms), then attempt it with the kind's executor, retrying retryable upstream failures
// with exponential backoff and jitter (at least the upstream's Retry-After), as long as the
// deadline leaves room. Every attempt is recorded in the card metadata as it ends, so a call
// that times out still shows what it tried; the cost estimate is charged the same way. Every
// secret the executor read is redacted from the result, the error and the records.
import { setTimeout as sleep } from 'node:timers/promises';
import { MeshError, ToolError, errorCodeOf, type OAuth2Auth } from '@toolmesh/protocol';
import type { CallsStore } from '@toolmesh/store';
import type { ToolContext } from '@toolmesh/tool-service';
import { backoffMs } from '@toolmesh/bus';
import { SpanKind, withSpan } from '@toolmesh/telemetry';
import { UpstreamFailure, type KindExecutor } from './kinds/kind.ts';
import type { Policies } from './policies.ts';
import type { RegistryTool } from '@toolmesh/tool-service';
import { createRedactor, type Redactor } from './redact.ts';
import type { SecretReader } from './secrets.ts';
import type { OAuthTokens } from './oauth.ts';

export interface RunDeps {
  /** Per-tool rate buckets (calls). */
  store: CallsStore;
  secrets: SecretReader;
  oauth: OAuthTokens;
}

interface AttemptRecord {
  attempt: number;
  duration_ms: number;
  outcome: 'succeeded' | 'failed';
  code?: string;
  message?: string;
  status?: number;
  retry_in_ms?: number;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

async function takeToken(
  deps: RunDeps,
  tool: RegistryTool,
  p: NonNullable<Policies['rateLimit']>,
  ctx: ToolContext,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const waitMs = await deps.store.rateBuckets.take(tool.project, tool.name, {
      perSecond: p.perSecond,
      burst: p.burst,
    });
    if (waitMs === 0) return Date.now() - started;
    const waited = Date.now() - started;
    if (waited + waitMs > p.maxWaitMs || Date.now() + waitMs >= ctx.deadline) {
      throw new ToolError(
        `${tool.name} is over its rate limit (${round(p.perSecond * 60)} per minute, burst ${p.burst}); a token frees up in ${waitMs} ms`,
        {
          code: 'rate_limited',
          details: { retry_after_ms: waitMs, per_minute: p.perSecond * 60, burst: p.burst },
        },
      );
    }
    await sleep(waitMs, undefined, { signal: ctx.signal });
  }
}

/** The error a failed call files: the same code, with every secret taken out. */
function redactedError(err: unknown, r: Redactor, toolName: string): MeshError {
  if (err instanceof MeshError) {
    return new MeshError(err.code, r.redactText(err.message), {
      ...(err.details ? { details: r.redact(err.details) } : {}),
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new MeshError('internal_error', `${toolName} crashed: ${r.redactText(message)}`);
}

/** Logs what a crash says (redacted): the result only carries its message. */
function crashed(err: unknown, r: Redactor, ctx: ToolContext): void {
  if (err instanceof MeshError) return;
  const message = err instanceof Error ? err.message : String(err);
  const stack = err instanceof Error ? err.stack : undefined;
  ctx.logger.error(
    { error: r.redactText(message), ...(stack ? { stack: r.redactText(stack) } : {}) },
    'registry tool crashed',
  );
}

export async function runRegistryCall(
  deps: RunDeps,
  tool: RegistryTool,
  policies: Policies,
  executor: KindExecutor,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<unknown> {
  const redactor = createRedactor();
  const attempts: AttemptRecord[] = [];
  if (tool.deprecated) {
    // The call runs; its card tells whoever reads it that the tool is on its way out.
    ctx.annotate({
      deprecation: {
        deprecated: true,
        message:
          tool.deprecationMessage ??
          `${tool.name} is deprecated: it still runs, but may be removed; look for its replacement`,
        ...(tool.apiVersion ? { version: tool.apiVersion } : {}),
      },
    });
  }
  const started = performance.now();
  const charge = () => {
    if (!policies.cost) return;
    const seconds = (performance.now() - started) / 1000;
    const amount = policies.cost.per_call + policies.cost.per_second * seconds;
    ctx.charge({ amount: Math.round(amount * 1e9) / 1e9, currency: policies.cost.currency });
  };
  if (policies.rateLimit) {
    const waited = await takeToken(deps, tool, policies.rateLimit, ctx);
    if (waited > 0) ctx.annotate({ rate_limit_wait_ms: waited });
  }
  // Charged once the call may go out (a call refused by its rate limit cost nothing), and
  // again when it ends; a call that times out keeps the first estimate. A call that never
  // reached the upstream (bad arguments, a missing secret, egress refused) costs nothing.
  charge();
  let reached = false;
  const secret = async (name: string) => {
    const value = await deps.secrets.get(tool.project, name);
    redactor.add(value);
    return value;
  };
  const oauthToken = (auth: OAuth2Auth, rejected?: string) =>
    deps.oauth.token(tool.project, auth, {
      rejected,
      reveal: (v) => redactor.add(v),
      signal: ctx.signal,
    });
  try {
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now();
      try {
        const result = await withSpan(
          'upstream call',
          {
            kind: SpanKind.CLIENT,
            attributes: { 'toolmesh.tool': tool.name, 'toolmesh.attempt': attempt },
          },
          () =>
            executor.attempt(tool, args, {
              ...ctx,
              attempt,
              secret,
              redact: (value) => redactor.add(value),
              oauthToken,
              progress: (detail) => ctx.progress(detail ? redactor.redact(detail) : undefined),
            }),
        );
        reached = true;
        attempts.push({
          attempt,
          duration_ms: round(performance.now() - t0),
          outcome: 'succeeded',
        });
        return redactor.redact(result);
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason as Error;
        if (err instanceof UpstreamFailure) reached = true;
        const record: AttemptRecord = {
          attempt,
          duration_ms: round(performance.now() - t0),
          outcome: 'failed',
          code: errorCodeOf(err) ?? 'internal_error',
          message: redactor.redactText(err instanceof Error ? err.message : String(err)),
        };
        const status = err instanceof MeshError ? err.details?.['status'] : undefined;
        if (typeof status === 'number') record.status = status;
        attempts.push(record);
        const retryable =
          err instanceof UpstreamFailure &&
          err.retryableUpstream &&
          attempt <= policies.retries.max;
        if (!retryable) {
          crashed(err, redactor, ctx);
          throw redactedError(err, redactor, tool.name);
        }
        const delay = Math.max(
          backoffMs(attempt, policies.retries.baseMs, policies.retries.maxMs),
          err.retryAfterMs ?? 0,
        );
        // No room for another attempt before the deadline: fail now with what the upstream said.
        if (Date.now() + delay >= ctx.deadline) throw redactedError(err, redactor, tool.name);
        record.retry_in_ms = delay;
        ctx.annotate({ attempts: [...attempts] });
        ctx.progress(redactor.redact({ retrying: true, ...record }));
        await sleep(delay, undefined, { signal: ctx.signal });
      }
    }
  } finally {
    ctx.annotate({ attempts });
    if (reached) charge();
    else ctx.charge(undefined);
  }
}
