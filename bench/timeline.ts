// `BENCH_TIMELINE=1 pnpm bench agent` (or `mcp`): where one turn's (one call's) time goes, hop
// by hop. While it records, every message under the deployment's subject root is seen by one
// wildcard subscription and stamped with the time since its turn began; the table gives, for each subject (agent ids
// folded, a task's or state event's status appended) and each model request, the median over
// the recorded turns of when it was seen. The gaps between rows are the hops: the api's task
// statement and wakeup, a claim, a model request, a step's commit, the tool service's card.
// Recording costs the bench process some CPU, so these turns run after the measured ones.
import type { NatsConnection } from '@nats-io/transport-node';
import { table } from './stats.ts';

export interface Timeline {
  /** Stamps `label` on the turn being recorded (nothing when none is). */
  mark(label: string): void;
  /** Runs one operation as a recorded turn. */
  record(op: () => Promise<void>): Promise<void>;
  /** The median table, rows in the order they happen. */
  print(): string;
}

export function createTimeline(
  nc: NatsConnection,
  root: string,
  /** The last row's label, and what the times count from (an agent turn's by default). */
  words: { end: string; since: string } = {
    end: 'turn ended (task event handled by the caller)',
    since: 'the POST',
  },
): Timeline {
  const seen = new Map<string, number[]>();
  let current: Map<string, number> | undefined;
  let t0 = 0;
  const mark = (label: string) => {
    if (!current) return;
    // The second message of a kind in one turn (the second wakeup, say) is a row of its own.
    let key = label;
    for (let n = 2; current.has(key); n++) key = `${label} #${n}`;
    current.set(key, performance.now() - t0);
  };
  nc.subscribe(`${root}.>`, {
    callback: (_err, m) => {
      if (!current) return;
      let label = m.subject.slice(root.length + 1).replace(/\.agent\.[^.]+\./, '.agent.<agent>.');
      if (/\.evt\.agent\.<agent>\.(task|state)$/.test(label)) {
        const e = m.json<{ status?: string; state?: string }>();
        label += ` (${e.status ?? e.state ?? '?'})`;
      }
      mark(label);
    },
  });
  return {
    mark,
    record: async (op) => {
      current = new Map();
      t0 = performance.now();
      try {
        await op();
        mark(words.end);
        for (const [k, v] of current) seen.set(k, [...(seen.get(k) ?? []), v]);
      } finally {
        current = undefined;
      }
    },
    print: () => {
      const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
      const rows = [...seen]
        .map(([what, at]) => ({ what, at: median(at), n: at.length }))
        .sort((a, b) => a.at - b.at);
      return table(
        rows.map((r, i) => ({
          [`ms since ${words.since}`]: r.at.toFixed(2),
          'gap ms': (i === 0 ? r.at : r.at - rows[i - 1]!.at).toFixed(2),
          seen: `${r.n}`,
          what: r.what,
        })),
      );
    },
  };
}
