// The regular-expression engine every user JSON Schema runs on. A tenant's `pattern` or
// `patternProperties` on V8's backtracking engine can take exponential time on a crafted string
// (`^(a+)+$` against 40 `a`s and a `!` blocks the event loop for minutes). RE2 (here its pure
// JavaScript port, re2js: no native binary, no install script) matches in time linear in the
// input. RE2 has no lookaround and no backreferences: a schema using them does not compile, and
// the api refuses it at registration with a message that says why.
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';

/** A pattern RE2 cannot compile: lookaround, a backreference, or a syntax error. */
export class UnsupportedPatternError extends Error {
  readonly code = 'unsupported_pattern';
  readonly pattern: string;
  constructor(pattern: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      `pattern ${JSON.stringify(pattern)} is not a regular expression the linear-time engine ` +
        `(RE2) runs: ${why} (RE2 has no lookahead, lookbehind or backreferences)`,
      { cause },
    );
    this.name = 'UnsupportedPatternError';
    this.pattern = pattern;
  }
}

/** Compiles an ECMA-262 pattern (the dialect of JSON Schema) for RE2; throws if RE2 cannot. */
export function compileRe2(pattern: string): RegExpLike {
  let re: RE2JS;
  try {
    // translateRegExp rewrites JavaScript-only spellings (`\u00e9`, `(?<name>`) for RE2.
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    throw new UnsupportedPatternError(pattern, err);
  }
  // ajv keys its compiled patterns by `toString()`: without one, every pattern of an instance
  // would share the first one's matcher.
  const key = `re2:${pattern}`;
  const rx: RegExpLike & { toString(): string } = {
    test: (s: string) => re.test(s),
    toString: () => key,
  };
  return rx;
}

/**
 * ajv's `code.regExp` option. The flags ajv passes are `u` (or none): RE2 matches code points
 * either way. `code` is only read by ajv's standalone code generation, which is not used here.
 */
export const re2Engine: RegExpEngine = Object.assign(
  (pattern: string, _flags: string): RegExpLike => compileRe2(pattern),
  { code: 'compileRe2' },
);
