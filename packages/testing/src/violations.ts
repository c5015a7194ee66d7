// Permission violations seen by the test NATS servers of this process. Every authenticated
// server a fixture starts feeds its log here; the test setup (vitest-setup.ts) fails the test
// during which a violation was logged, with the subject and the user named, unless the test said
// it expects that refusal (a red-team test trying what a tenant may not). Kept on globalThis: a
// test runner may load this module more than once into one process.

export interface Violation {
  /** `Publish` or `Subscription`. */
  kind: string;
  subject: string;
  /** Who was refused: `the <service> user`, or what is known of the key (a project credential). */
  user: string;
  /** The service user refused (`api`, `skills`, ...); undefined for any other user. */
  service?: string;
  /** The server's log line as it was written. */
  line: string;
}

type Predicate = (v: Violation) => boolean;

interface State {
  seen: Violation[];
  allowed: Predicate[];
  /** Public key -> service user name, of every server started in this process. */
  names: Map<string, string>;
}

const KEY = Symbol.for('toolmesh.testing.natsViolations');

function state(): State {
  const g = globalThis as { [KEY]?: State };
  return (g[KEY] ??= { seen: [], allowed: [], names: new Map() });
}

/** Names the users of a server's keys in violation reports (`api`, `skills`, ...). */
export function nameUsers(names: ReadonlyMap<string, string>): void {
  for (const [key, name] of names) state().names.set(key, name);
}

// nats-server 2.9+: `... - "<client name>" - Publish Violation - Nkey "U...", Subject "x"`.
const LINE =
  /(?:"(?<client>[^"]*)" - )?(?<kind>Publish|Subscription) Violation - (?:User|Nkey|JWT User) "(?<key>[^"]+)", Subject "(?<subject>[^"]*)"/;

/** Records the violations in a chunk of a server's log lines. */
export function recordServerLog(lines: readonly string[]): void {
  const s = state();
  for (const line of lines) {
    const m = LINE.exec(line);
    if (m?.groups === undefined) {
      if (/Violation/.test(line)) s.seen.push({ kind: '?', subject: '?', user: '?', line });
      continue;
    }
    const { kind = '?', subject = '?', key = '?', client = '' } = m.groups;
    const service = s.names.get(key);
    const user =
      service !== undefined
        ? `the ${service} user`
        : `${key} (not a service user: a project credential${client === '' ? '' : `, client "${client}"`})`;
    s.seen.push({ kind, subject, user, line, ...(service === undefined ? {} : { service }) });
  }
}

/**
 * Lets the current test provoke refusals that match (e.g. a red-team test publishing into
 * another project). Reset before each test.
 */
export function allowViolations(match: Predicate | RegExp): void {
  state().allowed.push(
    match instanceof RegExp ? (v) => match.test(v.subject) || match.test(v.line) : match,
  );
}

/** Violations recorded since the last call, less those the current test allowed. */
export function takeViolations(): Violation[] {
  const s = state();
  const taken = s.seen.splice(0, s.seen.length);
  return taken.filter((v) => !s.allowed.some((p) => p(v)));
}

/** Forgets what the last test allowed. */
export function resetAllowedViolations(): void {
  state().allowed.length = 0;
}

export function describeViolations(vs: readonly Violation[]): string {
  return vs.map((v) => `${v.kind} violation by ${v.user} on subject "${v.subject}"`).join('\n');
}
