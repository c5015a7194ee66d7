// One pass of the sandbox-reaper: take a batch of due sandboxes (see the store's sandbox-reap
// repo for which and how several reapers share the table), destroy each through the provider
// its row names, by sandbox id, a few at a time, and record each outcome. A failed destroy is
// recorded with its error and retried on a later pass after an exponential backoff; a row whose
// provider this reaper lacks fails the same way (another reaper may have it).
import type { Logger } from 'pino';
import { metrics } from '@toolmesh/telemetry';
import type { ReapClaim, SkillsStore } from '@toolmesh/store';
import type { Destroyers } from './providers.ts';

export interface PassSummary {
  /** Rows this pass claimed. */
  taken: number;
  destroyed: number;
  failed: number;
  /** Expired rows left alone: held by a live lock, or a task or job still runs in them. */
  skipped: number;
  /** Of the rows taken: past the idle expiry, past the hard expiry, retries of failures. */
  idle: number;
  hard: number;
  retry: number;
  durationMs: number;
}

export interface SandboxReaperOptions {
  store: SkillsStore;
  destroyers: Destroyers;
  /** The name claims are taken under: `reaper:<instance id>`. */
  owner: string;
  batchSize: number;
  concurrency: number;
  claimMs: number;
  backoff: { baseMs: number; maxMs: number };
  logger: Logger;
}

export interface SandboxReaper {
  runPass(): Promise<PassSummary>;
}

export function createSandboxReaper(o: SandboxReaperOptions): SandboxReaper {
  const log = o.logger.child({ component: 'sandbox-reaper' });

  const reapOne = async (c: ReapClaim): Promise<boolean> => {
    const clog = log.child({ sandbox_id: c.sandbox_id, provider: c.provider, why: c.why });
    try {
      const destroyer = o.destroyers.get(c.provider);
      if (!destroyer) throw new Error(`no "${c.provider}" provider is configured in this reaper`);
      await destroyer.destroy(c.sandbox_id);
    } catch (err) {
      const f = await o.store.sandboxReap.failed(c.sandbox_id, o.owner, String(err), o.backoff);
      clog.warn(
        { err, attempts: f?.reap_attempts, next_attempt_at: f?.next_attempt_at },
        'destroying a sandbox failed; it will be tried again',
      );
      return false;
    }
    if (!(await o.store.sandboxReap.destroyed(c.sandbox_id, o.owner))) {
      // Our claim lapsed mid-destroy and another reaper took the row: it will find it gone.
      clog.warn('the claim lapsed before the destroy was recorded');
    }
    clog.debug('sandbox destroyed');
    return true;
  };

  return {
    runPass: async () => {
      try {
        const summary = await pass();
        metrics.reaperPasses.inc({ reaper: 'sandbox-reaper', outcome: 'ok' });
        metrics.reaperReaped.inc({ reaper: 'sandbox-reaper' }, summary.destroyed);
        return summary;
      } catch (err) {
        metrics.reaperPasses.inc({ reaper: 'sandbox-reaper', outcome: 'error' });
        throw err;
      }
    },
  };

  async function pass(): Promise<PassSummary> {
    const started = performance.now();
    const claims = await o.store.sandboxReap.claimDue({
      owner: o.owner,
      limit: o.batchSize,
      claimMs: o.claimMs,
    });
    const skipped = await o.store.sandboxReap.countHeld();
    if (claims.length > 0) log.info({ taken: claims.length }, 'reaper pass started');
    let destroyed = 0;
    let failed = 0;
    let next = 0;
    const worker = async () => {
      while (next < claims.length) {
        const c = claims[next++]!;
        // One row's database trouble must not abandon the rest: its claim lapses and a later
        // pass retakes it.
        const ok = await reapOne(c).catch((err: unknown) => {
          log.error({ err, sandbox_id: c.sandbox_id }, 'recording a reap failed');
          return false;
        });
        if (ok) destroyed++;
        else failed++;
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(o.concurrency, claims.length) }, () => worker()),
    );
    const count = (why: ReapClaim['why']) => claims.filter((c) => c.why === why).length;
    const summary: PassSummary = {
      taken: claims.length,
      destroyed,
      failed,
      skipped,
      idle: count('idle'),
      hard: count('hard'),
      retry: count('retry'),
      durationMs: Math.round(performance.now() - started),
    };
    log.info(summary, 'reaper pass');
    return summary;
  }
}
