// A schedule's ticks: the cron pattern (5 fields, or 6 with seconds) read in its time zone by
// croner, and the ids a tick's call or task gets. The ids are derived from the schedule (its
// name and creation time) and the tick's time, so a tick fired twice is one call: the mesh's
// usual dedupe (Nats-Msg-Id, the lease, the one card) keeps it one.
import { Cron } from 'croner';
import { v5 as uuidv5 } from 'uuid';

const NAMESPACE = '6b1f8e52-3c0e-4f55-9a55-2d7c43a1f0d4';
const cache = new Map<string, Cron>();

export class InvalidScheduleError extends Error {
  readonly field: 'cron' | 'timezone';
  constructor(field: 'cron' | 'timezone', message: string) {
    super(message);
    this.name = 'InvalidScheduleError';
    this.field = field;
  }
}

/**
 * Refuses a pattern of other than 5 fields or 6 (seconds first). croner also reads a seventh
 * field (years) and nicknames (`@daily`); the protocol promises only these two forms, so a
 * schedule means the same under any later parser. Checked when a schedule is created, not when
 * a stored one fires (a schedule created before this check keeps firing).
 */
export function assertCronFields(pattern: string): void {
  const fields = pattern.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) {
    throw new InvalidScheduleError(
      'cron',
      `invalid cron pattern: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got ${fields}`,
    );
  }
}

/** A parsed pattern for the zone; throws InvalidScheduleError on a bad pattern or zone. */
export function cronOf(pattern: string, timezone: string): Cron {
  const key = `${timezone}\u0000${pattern}`;
  const hit = cache.get(key);
  if (hit) return hit;
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new InvalidScheduleError('timezone', `unknown time zone ${JSON.stringify(timezone)}`);
  }
  let cron: Cron;
  try {
    cron = new Cron(pattern, { timezone, paused: true });
  } catch (err) {
    throw new InvalidScheduleError('cron', `invalid cron pattern: ${(err as Error).message}`);
  }
  if (cron.nextRun(new Date()) === null) {
    throw new InvalidScheduleError('cron', `cron pattern ${JSON.stringify(pattern)} never fires`);
  }
  if (cache.size >= 1_000) cache.delete(cache.keys().next().value as string);
  cache.set(key, cron);
  return cron;
}

/** The first tick strictly after `after`; null when the pattern has no more. */
export function nextTick(pattern: string, timezone: string, after: Date): Date | null {
  return cronOf(pattern, timezone).nextRun(after);
}

interface TickOf {
  project_id: string;
  name: string;
  created_at: Date;
}

/** The tool_call_id of a tick: at most 64 + 24 characters of [A-Za-z0-9_-]. */
export function tickToolCallId(s: TickOf, tick: Date): string {
  return `sch-${s.name}-${s.created_at.getTime().toString(36)}-${tick.getTime().toString(36)}`;
}

/** The task id of a tick: a UUID (v5) of the schedule and the tick. */
export function tickTaskId(s: TickOf, tick: Date): string {
  return uuidv5(`${s.project_id}/${s.name}/${s.created_at.getTime()}/${tick.getTime()}`, NAMESPACE);
}
