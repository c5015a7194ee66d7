// Makes a configuration safe to log. Secrets hide in two places: values of keys whose names say
// so, and the password part of connection URLs, which is easy to miss in a `url` key.

const SECRET_KEY = /key|secret|token|password/i;
const MASK = '***';

/** A deep copy with secrets masked. Strings stay strings, so the copy keeps the input's type. */
export function redactConfig<T>(config: T): T {
  return redact(config, false) as T;
}

function redact(value: unknown, secret: boolean): unknown {
  if (typeof value === 'string') {
    if (secret) return value === '' ? value : MASK;
    return maskUrlPasswords(value);
  }
  if (Array.isArray(value)) return value.map((item: unknown) => redact(item, secret));
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        redact(item, secret || SECRET_KEY.test(key)),
      ]),
    );
  }
  // Numbers and booleans are not credentials (`max_tokens = 4096` stays readable).
  return value;
}

/**
 * `postgres://user:secret@host/db` becomes `postgres://user:***@host/db`. Each URL in a list
 * (`nats://a:x@h1,nats://b:y@h2`) is treated alone. The userinfo ends at the last `@` of a URL, so
 * an unescaped `@`, `/` or `,` in a password is masked too rather than half shown.
 */
function maskUrlPasswords(text: string): string {
  return text
    .split(/(?=\b[a-z][a-z0-9+.-]*:\/\/)/i)
    .map((part) => {
      const scheme = part.indexOf('://');
      const at = part.lastIndexOf('@');
      if (scheme < 0 || at < scheme) return part;
      const userinfo = part.slice(scheme + 3, at);
      const colon = userinfo.indexOf(':');
      if (colon < 0) return part;
      return `${part.slice(0, scheme + 3 + colon + 1)}${MASK}${part.slice(at)}`;
    })
    .join('');
}
