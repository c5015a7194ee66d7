// Secrets never reach a card, an event, a log line or an error body: every value a call read is
// replaced by `[redacted]` in what the call produced (result, error message and details, attempt
// records) before anything is stored. Upstreams echo credentials in more than one spelling, so
// the base64 form (basic auth) and the percent-encoded form are redacted too.
export const REDACTED = '[redacted]';

export interface Redactor {
  add(secret: string): void;
  /** A deep copy with every secret replaced; the input itself when there is nothing to hide. */
  redact<T>(value: T): T;
  redactText(text: string): string;
}

export function createRedactor(): Redactor {
  const needles = new Set<string>();
  let sorted: string[] = [];
  const redactText = (text: string) => {
    let out = text;
    for (const n of sorted) if (out.includes(n)) out = out.split(n).join(REDACTED);
    return out;
  };
  const deep = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v);
    if (Array.isArray(v)) return v.map(deep);
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [redactText(k), deep(x)]));
    }
    return v;
  };
  return {
    add: (secret) => {
      if (secret === '') return;
      for (const form of [
        secret,
        Buffer.from(secret, 'utf8').toString('base64'),
        Buffer.from(secret, 'utf8').toString('base64url'),
        encodeURIComponent(secret),
      ]) {
        needles.add(form);
      }
      // Longest first, so a secret containing another is replaced whole.
      sorted = [...needles].sort((a, b) => b.length - a.length);
    },
    redact: <T>(value: T): T => (needles.size === 0 ? value : (deep(value) as T)),
    redactText: (text) => (needles.size === 0 ? text : redactText(text)),
  };
}
