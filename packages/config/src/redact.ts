// Makes configuration, log lines and error messages safe to show. Secrets hide in three places:
// values of keys whose names say so, the credentials of connection URLs (easy to miss in a `url`
// key, and repeated in driver errors), and anywhere a known secret value is quoted. Every URL
// form is covered: `user:password@`, a token as the whole userinfo (`nats://token@host`), and
// query parameters such as `?token=`, `?password=`, `?sslpassword=`, `?api_key=`.

const SECRET_KEY = /key|secret|token|password|creds/i;
export const MASK = '***';

/** Query parameters whose value is a credential. */
const SECRET_PARAM = /token|pass|pwd|secret|key|auth|signature|sig$|credential/i;

/** Schemes whose userinfo without a colon is a user name, not a token. */
const USER_ONLY_SCHEMES: ReadonlySet<string> = new Set(['postgres', 'postgresql']);

/** A deep copy with secrets masked. Strings stay strings, so the copy keeps the input's type. */
export function redactConfig<T>(config: T): T {
  return redact(config, false) as T;
}

function redact(value: unknown, secret: boolean): unknown {
  if (typeof value === 'string') {
    if (secret) return value === '' ? value : MASK;
    return redactUrls(value);
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

const SCHEME_START = /(?=\b[a-z][a-z0-9+.-]*:\/\/)/i;
const QUERY_PARAM = /([?&;])([^=&#\s]+)=([^&#\s]*)/g;

/**
 * Masks the credentials of every URL in a text: `postgres://user:secret@host/db` becomes
 * `postgres://user:***@host/db`, `nats://tok@h` becomes `nats://***@h`, `?token=abc&x=1`
 * becomes `?token=***&x=1`. Each URL in a list (`nats://a:x@h1,nats://b:y@h2`) is treated alone.
 * The userinfo ends at the last `@` of a URL, so an unescaped `@`, `/` or `,` in a password is
 * masked too rather than half shown.
 */
export function redactUrls(text: string): string {
  return scanUrls(text, undefined);
}

/** redactUrls, also collecting each masked credential into `found`. */
function scanUrls(text: string, found: string[] | undefined): string {
  if (!text.includes('://')) return text;
  return text
    .split(SCHEME_START)
    .map((part) => {
      const scheme = part.indexOf('://');
      if (scheme < 0) return part;
      // The URL ends at whitespace or a quote; what follows is prose and stays as it is.
      const end = part.slice(scheme).search(/[\s"'<>`]/);
      const url = end < 0 ? part : part.slice(0, scheme + end);
      const rest = end < 0 ? '' : part.slice(scheme + end);
      const masked = maskUserinfo(url, scheme, found).replace(
        QUERY_PARAM,
        (whole, sep: string, name: string, value: string) => {
          // A list of URLs separated by commas: the comma before the next URL stays.
          const comma = value.endsWith(',') ? ',' : '';
          const secret = comma ? value.slice(0, -1) : value;
          if (!SECRET_PARAM.test(name) || secret === '' || secret === MASK) return whole;
          found?.push(secret);
          return `${sep}${name}=${MASK}${comma}`;
        },
      );
      return masked + rest;
    })
    .join('');
}

function maskUserinfo(url: string, scheme: number, found: string[] | undefined): string {
  const at = url.lastIndexOf('@');
  const authorityStart = scheme + 3;
  if (at < authorityStart) return url;
  const slash = url.indexOf('/', authorityStart);
  if (slash >= 0 && slash < at) {
    // An `@` past the first `/` is userinfo only when a password with an unescaped `/` came
    // first (`user:p/w@host`), not in a path (`file:///x/pkg@1.0/`, `https://h:8080/a@b`).
    const colon = url.indexOf(':', authorityStart);
    if (colon < 0 || colon > slash || /^\d*$/.test(url.slice(colon + 1, slash))) return url;
  }
  const userinfo = url.slice(authorityStart, at);
  if (userinfo === '') return url;
  const colon = userinfo.indexOf(':');
  if (colon < 0) {
    // A user name alone (postgres://app@db) is no secret; elsewhere it is a token (nats://tok@h).
    const name = /[a-z0-9+.-]*$/i.exec(url.slice(0, scheme))?.[0].toLowerCase() ?? '';
    if (USER_ONLY_SCHEMES.has(name)) return url;
    if (userinfo === MASK) return url;
    found?.push(userinfo);
    return `${url.slice(0, authorityStart)}${MASK}${url.slice(at)}`;
  }
  const password = userinfo.slice(colon + 1);
  if (password === MASK || password === '') return url;
  found?.push(password);
  return `${url.slice(0, authorityStart + colon + 1)}${MASK}${url.slice(at)}`;
}

/** The secret values of a configuration: under secret-named keys, and URL credentials. */
export function secretsOf(config: unknown): string[] {
  const found: string[] = [];
  const visit = (value: unknown, secret: boolean) => {
    if (typeof value === 'string') {
      if (secret && value !== '') found.push(value);
      else scanUrls(value, found);
      return;
    }
    if (Array.isArray(value)) for (const v of value) visit(v, secret);
    else if (typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) visit(v, secret || SECRET_KEY.test(k));
  };
  visit(config, false);
  // Too short to be a secret worth hiding, and masking it would garble ordinary text.
  // A driver may quote the percent-decoded form of a URL's credential.
  const decoded = found.map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  return [...new Set([...found, ...decoded])].filter((s) => s.length >= 6);
}

export interface Redactor {
  /** The text with URL credentials and every known secret masked. */
  text(text: string): string;
}

/** A redactor of URL credentials and of the given secret values (the config's, say). */
export function createRedactor(secrets: readonly string[] = []): Redactor {
  // Log lines are JSON: a secret holding a quote or a backslash appears escaped there.
  const forms = secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
  // Longest first, so a secret containing another is masked whole.
  const known = [...new Set(forms)].filter((s) => s !== '').sort((a, b) => b.length - a.length);
  return {
    text: (t) => {
      let out = redactUrls(t);
      for (const s of known) if (out.includes(s)) out = out.split(s).join(MASK);
      return out;
    },
  };
}
