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

/**
 * Linear time is time proportional to the input times the size of the compiled pattern, and
 * counted repetitions make that size large (`[\s\S]{1000}` three times is 3000 states, a
 * quarter of a second per 100 KB of input). So one pattern may compile to at most this many
 * states (`^[a-z0-9_-]{1,64}$` is 131, `^\w{1,1000}$` about 2000)...
 */
export const MAX_PATTERN_PROGRAM = 2_500;
/** ...and all the patterns of one schema to at most this many, checked at registration. */
export const MAX_SCHEMA_PROGRAM = 5_000;

/** A pattern too costly to run: its compiled size is over the limit. */
export class PatternTooLargeError extends Error {
  readonly code = 'pattern_too_large';
  constructor(message: string) {
    super(message);
    this.name = 'PatternTooLargeError';
  }
}

/** The states left to the schema being compiled; undefined outside withPatternBudget. */
let budget: number | undefined;

/**
 * Runs `fn` (an ajv compile: synchronous) with at most `states` pattern states in total. Only
 * patterns compiled during `fn` count, so give it a fresh ajv instance for an exact total.
 */
export function withPatternBudget<T>(states: number, fn: () => T): T {
  const outer = budget;
  budget = states;
  try {
    return fn();
  } finally {
    budget = outer;
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
  const size = re.programSize();
  if (size > MAX_PATTERN_PROGRAM) {
    throw new PatternTooLargeError(
      `pattern ${JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 77)}...` : pattern)} compiles to ${size} states, over the limit of ${MAX_PATTERN_PROGRAM}: use smaller repetition counts`,
    );
  }
  if (budget !== undefined) {
    budget -= size;
    if (budget < 0) {
      throw new PatternTooLargeError(
        `the schema's patterns compile to more than ${MAX_SCHEMA_PROGRAM} states in total: use fewer patterns or smaller repetition counts`,
      );
    }
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
