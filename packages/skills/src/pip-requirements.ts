// A skill's Python requirements, read the way pip reads a requirements file (pip 23-25,
// src/pip/_internal/req/req_file.py) and written back in a canonical form that pip reads the
// same way: a build may fetch only from the deployment's configured indexes, so every pip
// option that could point it elsewhere, read another file or install from a path, URL or VCS is
// refused. Reading as pip does matters because pip is lenient: it splits lines on every Unicode
// line break, joins lines ending in a backslash, takes unique prefixes of long options (`--ind`
// for `--index-url`), joined short options (`-ihttp://...`) and options after a requirement on
// the same line. Writing back matters more: the file pip reads holds only lines built here from
// checked parts, so a reading that differs from pip's can refuse a file but never smuggle an
// option through.
//
// Allowed options: `--hash` after a requirement (it only narrows what may be installed), and on
// a line of their own `--require-hashes`, `--pre`, `--prefer-binary` and `--only-binary` (they
// choose among what the configured indexes serve). Refused: the index options (`-i`,
// `--index-url`, `--pypi-url`, `--extra-index-url`, `--no-index`, `-f`, `--find-links`,
// `--trusted-host`); `-r`/`-c` (the build receives this file alone, so another file would be
// read from the build's disk or a URL, never from the skill); `-e` (a path or VCS checkout);
// `--no-binary`, `--global-option`, `-C`/`--config-settings` and `--use-feature` (they change
// how packages are built, which a skill's environment has no need to).

/** A requirement file's problem: the line (1-based, as pip numbers it) and what is wrong. */
export class RequirementError extends Error {
  readonly line: number | undefined;
  constructor(message: string, line?: number) {
    super(message);
    this.name = 'RequirementError';
    this.line = line;
  }
}

interface PipOption {
  readonly long: readonly string[];
  readonly short?: string;
  readonly takesValue: boolean;
}

// pip's requirements-file parser, option for option (SUPPORTED_OPTIONS + SUPPORTED_OPTIONS_REQ):
// prefixes are resolved against this whole table, as optparse does.
const PIP_OPTIONS: readonly PipOption[] = [
  { long: ['--index-url', '--pypi-url'], short: '-i', takesValue: true },
  { long: ['--extra-index-url'], takesValue: true },
  { long: ['--no-index'], takesValue: false },
  { long: ['--constraint'], short: '-c', takesValue: true },
  { long: ['--requirement'], short: '-r', takesValue: true },
  { long: ['--editable'], short: '-e', takesValue: true },
  { long: ['--find-links'], short: '-f', takesValue: true },
  { long: ['--no-binary'], takesValue: true },
  { long: ['--only-binary'], takesValue: true },
  { long: ['--prefer-binary'], takesValue: false },
  { long: ['--require-hashes'], takesValue: false },
  { long: ['--pre'], takesValue: false },
  { long: ['--trusted-host'], takesValue: true },
  { long: ['--use-feature'], takesValue: true },
  { long: ['--global-option'], takesValue: true },
  { long: ['--hash'], takesValue: true },
  { long: ['--config-settings'], short: '-C', takesValue: true },
];
const LONG_NAMES = PIP_OPTIONS.flatMap((o) => o.long);

const FILE_OPTIONS = new Set(['--require-hashes', '--pre', '--prefer-binary', '--only-binary']);
const REQUIREMENT_OPTIONS = new Set(['--hash']);
const INDEX_OPTIONS = new Set([
  '--index-url',
  '--extra-index-url',
  '--no-index',
  '--find-links',
  '--trusted-host',
]);

function refusal(option: string): string {
  if (INDEX_OPTIONS.has(option)) {
    return `sets a package index (${option}): dependencies come only from the deployment's configured indexes`;
  }
  if (option === '--requirement' || option === '--constraint') {
    return `reads another file (${option}): list the requirements in this file`;
  }
  if (option === '--editable') {
    return 'installs from a path or VCS checkout (--editable): dependencies come only from the configured indexes';
  }
  return `uses ${option}, which a skill may not set (allowed: --hash after a requirement; --require-hashes, --pre, --prefer-binary, --only-binary on a line of their own)`;
}

/** Python's str.splitlines() boundaries, which is how pip splits a requirements file. */
// eslint-disable-next-line no-control-regex -- the file separators are line breaks to Python
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const COMMENT = /(^|\s+)#.*$/;

/** pip's preprocess(): join backslash continuations, then drop comments and blank lines. */
function logicalLines(text: string): { line: number; text: string }[] {
  const joined: { line: number; text: string }[] = [];
  let pending: string[] = [];
  let first = 0;
  text.split(LINE_BREAK).forEach((raw, i) => {
    const n = i + 1;
    // A comment (at the start) never continues, even when it ends in a backslash.
    const isComment = /^\s*#/.test(raw);
    if (!raw.endsWith('\\') || isComment) {
      const line = isComment ? ` ${raw}` : raw;
      if (pending.length > 0) {
        joined.push({ line: first, text: pending.join('') + line });
        pending = [];
      } else {
        joined.push({ line: n, text: line });
      }
    } else {
      if (pending.length === 0) first = n;
      pending.push(raw.replace(/^\\+|\\+$/g, '')); // Python's strip("\\"): both ends
    }
  });
  if (pending.length > 0) joined.push({ line: first, text: pending.join('') });
  return joined
    .map((l) => ({ line: l.line, text: l.text.replace(COMMENT, '').trim() }))
    .filter((l) => l.text !== '');
}

/** pip's break_args_options(): the requirement ends at the first space-separated token with a dash. */
function breakArgsOptions(line: string): { args: string; options: string } {
  const tokens = line.split(' ');
  const at = tokens.findIndex((t) => t.startsWith('-'));
  if (at === -1) return { args: line, options: '' };
  return { args: tokens.slice(0, at).join(' '), options: tokens.slice(at).join(' ') };
}

function resolveLong(name: string): string {
  if (LONG_NAMES.includes(name)) return name;
  const matches = LONG_NAMES.filter((n) => n.startsWith(name));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new RequirementError(`has an unknown option ${name}`);
  throw new RequirementError(`has an ambiguous option ${name} (${matches.join(', ')})`);
}

const optionOf = (name: string) => PIP_OPTIONS.find((o) => o.long.includes(name))!;

interface ParsedOption {
  /** The option's first long name, whatever spelling or alias the file used. */
  readonly name: string;
  readonly value?: string;
}

/** optparse over pip's table: `--opt=value`, `--opt value`, unique prefixes, `-xVALUE`, `-x VALUE`. */
function parseOptions(text: string): ParsedOption[] {
  // pip shlex-splits this part; quotes and escapes are refused rather than reproduced, since no
  // allowed option needs them.
  if (/["'\\]/.test(text)) {
    throw new RequirementError('has quotes or backslashes among its options');
  }
  const tokens = text.split(/\s+/).filter((t) => t !== '');
  const out: ParsedOption[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    let option: PipOption;
    let value: string | undefined;
    if (token.startsWith('--') && token.length > 2) {
      const eq = token.indexOf('=');
      const name = resolveLong(eq === -1 ? token : token.slice(0, eq));
      option = optionOf(name);
      if (eq !== -1) {
        if (!option.takesValue) throw new RequirementError(`gives a value to ${name}`);
        value = token.slice(eq + 1);
      }
    } else if (token.startsWith('-') && token.length > 1 && token !== '--') {
      const found = PIP_OPTIONS.find((o) => o.short === token.slice(0, 2));
      if (!found) throw new RequirementError(`has an unknown option ${token.slice(0, 2)}`);
      option = found;
      if (token.length > 2) value = token.slice(2);
    } else {
      throw new RequirementError(`has unexpected text among its options: ${token}`);
    }
    const name = option.long[0]!;
    if (option.takesValue && value === undefined) {
      value = tokens[++i];
      if (value === undefined) throw new RequirementError(`has ${name} without a value`);
    }
    out.push(value === undefined ? { name } : { name, value });
  }
  return out;
}

// PEP 508, name-based requirements only (a `name @ url` reference is refused).
const NAME = /[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?/y;
const VERSION_CMP = /(===|~=|==|!=|<=|>=|<|>)/y;
const VERSION = /[A-Za-z0-9_.*+!-]+/y;
const WSP = /[ \t]*/y;
const MARKER_VARS = new Set([
  'python_version',
  'python_full_version',
  'os_name',
  'sys_platform',
  'platform_release',
  'platform_system',
  'platform_version',
  'platform_machine',
  'platform_python_implementation',
  'implementation_name',
  'implementation_version',
  'extra',
  // packaging's legacy spellings
  'os.name',
  'sys.platform',
  'platform.version',
  'platform.machine',
  'platform.python_implementation',
  'python_implementation',
]);
const MARKER_VAR = /[a-z_.]+/y;
// PEP 508's python_str_c, either quote.
const MARKER_STRING =
  /"[ \t\w().{}\-*#:;,/?[\]!~`@$%^&=+|<>']*"|'[ \t\w().{}\-*#:;,/?[\]!~`@$%^&=+|<>"]*'/y;
const ARCHIVE = /\.(?:zip|whl|tar\.bz2|tbz|tar\.xz|txz|tlz|tar\.lz|tar\.lzma|tar\.gz|tgz|tar)$/i;

class Scanner {
  at = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  take(re: RegExp): string | undefined {
    re.lastIndex = this.at;
    const m = re.exec(this.text);
    if (!m) return undefined;
    this.at += m[0].length;
    return m[0];
  }
  ws(): void {
    this.take(WSP);
  }
  lit(s: string): boolean {
    this.ws();
    if (!this.text.startsWith(s, this.at)) return false;
    this.at += s.length;
    return true;
  }
  word(w: string): boolean {
    this.ws();
    if (!this.text.startsWith(w, this.at)) return false;
    if (/[\w.]/.test(this.text[this.at + w.length] ?? '')) return false;
    this.at += w.length;
    return true;
  }
  fail(what: string): never {
    throw new RequirementError(`is not a valid requirement (${what} at column ${this.at + 1})`);
  }
}

function markerVar(s: Scanner): void {
  s.ws();
  if (s.take(MARKER_STRING)) return;
  const v = s.take(MARKER_VAR);
  if (v === undefined || !MARKER_VARS.has(v)) s.fail('expected a marker variable or string');
}

function markerExpr(s: Scanner): void {
  if (s.lit('(')) {
    markerOr(s);
    if (!s.lit(')')) s.fail("expected ')'");
    return;
  }
  markerVar(s);
  s.ws();
  if (!s.take(VERSION_CMP) && !s.word('in') && !(s.word('not') && s.word('in'))) {
    s.fail('expected a marker operator');
  }
  markerVar(s);
}

function markerOr(s: Scanner): void {
  markerExpr(s);
  while (s.word('and') || s.word('or')) markerExpr(s);
}

function versionMany(s: Scanner): void {
  do {
    s.ws();
    if (!s.take(VERSION_CMP)) s.fail('expected a version comparison');
    s.ws();
    if (!s.take(VERSION)) s.fail('expected a version');
  } while (s.lit(','));
}

/**
 * Checks one requirement as PEP 508 (name, extras, versions, marker) and returns it trimmed;
 * refuses direct references, paths, URLs and anything pip would read as an option.
 */
export function checkRequirement(text: string): string {
  const req = text.trim();
  if (/[^\t\x20-\x7e]/.test(req)) {
    throw new RequirementError('has a character other than printable ASCII');
  }
  if (req.includes('${')) {
    throw new RequirementError('uses an environment variable (${...}), which is not expanded');
  }
  const s = new Scanner(req);
  if (!s.take(NAME)) s.fail('expected a package name');
  if (s.lit('@')) {
    throw new RequirementError(
      'is a direct reference (name @ url): dependencies come only from the configured indexes',
    );
  }
  if (s.lit('[')) {
    s.ws();
    if (s.take(NAME)) {
      while (s.lit(',')) {
        s.ws();
        if (!s.take(NAME)) s.fail('expected an extra');
      }
    }
    if (!s.lit(']')) s.fail("expected ']'");
  }
  s.ws();
  if (s.lit('(')) {
    versionMany(s);
    if (!s.lit(')')) s.fail("expected ')'");
  } else if (/[<>=!~]/.test(req[s.at] ?? '')) {
    versionMany(s);
  }
  const beforeMarker = req.slice(0, s.at).trim();
  if (s.lit(';')) markerOr(s);
  s.ws();
  if (s.at !== req.length) s.fail('unexpected text');
  // pip takes a requirement that looks like an archive file name as a path to that file.
  if (ARCHIVE.test(beforeMarker)) {
    throw new RequirementError('looks like an archive file, which pip would install as a path');
  }
  // pip would cut the line at a space-separated token starting with a dash and read the rest
  // as options (one may sit inside a marker's string).
  if (req.split(' ').some((t) => t.startsWith('-'))) {
    throw new RequirementError("has a space followed by '-', which pip would read as an option");
  }
  return req;
}

const HASH = /^(sha256|sha384|sha512):[0-9a-f]+$/;
const BINARY = /^(?::all:|:none:|[A-Za-z0-9][A-Za-z0-9._-]*(?:,[A-Za-z0-9][A-Za-z0-9._-]*)*)$/;

/** One logical line of a requirements file, in canonical form. */
function canonicalLine(text: string): string {
  const { args, options } = breakArgsOptions(text);
  const parsed = parseOptions(options);
  const editable = parsed.find((o) => o.name === '--editable');
  if (editable) throw new RequirementError(refusal('--editable'));
  if (args !== '') {
    const req = checkRequirement(args);
    const hashes: string[] = [];
    for (const o of parsed) {
      if (!REQUIREMENT_OPTIONS.has(o.name)) {
        throw new RequirementError(
          FILE_OPTIONS.has(o.name)
            ? `has ${o.name} after a requirement: put it on a line of its own`
            : refusal(o.name),
        );
      }
      if (!HASH.test(o.value!)) {
        throw new RequirementError(
          `has a --hash that is not sha256, sha384 or sha512 in hex: ${o.value}`,
        );
      }
      hashes.push(` --hash=${o.value}`);
    }
    return req + hashes.join('');
  }
  return parsed
    .map((o) => {
      if (!FILE_OPTIONS.has(o.name)) {
        throw new RequirementError(
          REQUIREMENT_OPTIONS.has(o.name) ? `has ${o.name} without a requirement` : refusal(o.name),
        );
      }
      if (o.name === '--only-binary') {
        if (!BINARY.test(o.value!))
          throw new RequirementError(`has a bad --only-binary value: ${o.value}`);
        return `--only-binary=${o.value}`;
      }
      return o.name;
    })
    .join('\n');
}

const BOMS: readonly [Buffer, string][] = [
  [Buffer.from([0x00, 0x00, 0xfe, 0xff]), 'UTF-32'],
  [Buffer.from([0xff, 0xfe, 0x00, 0x00]), 'UTF-32'],
  [Buffer.from([0xfe, 0xff]), 'UTF-16'],
  [Buffer.from([0xff, 0xfe]), 'UTF-16'],
];
const CODING = /coding[:=]\s*([-\w.]+)/;

/** The file's text as pip would decode it, when that is UTF-8; otherwise refused. */
export function decodeRequirements(data: Buffer): string {
  for (const [bom, name] of BOMS) {
    if (data.subarray(0, bom.length).equals(bom)) {
      throw new RequirementError(`is ${name}: a requirements file must be UTF-8`);
    }
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(data);
  } catch {
    throw new RequirementError('is not valid UTF-8');
  }
  // pip honours a PEP 263 coding comment in the first two lines.
  for (const line of text.split('\n').slice(0, 2)) {
    const coding = line.startsWith('#') ? CODING.exec(line)?.[1] : undefined;
    if (coding && !/^utf[-_]?8$/i.test(coding)) {
      throw new RequirementError(
        `declares the encoding ${coding}: a requirements file must be UTF-8`,
      );
    }
  }
  return text;
}

/** The file's lines in canonical form (requirements with their hashes, allowed options). */
export function canonicalRequirements(text: string): string[] {
  const out: string[] = [];
  for (const { line, text: logical } of logicalLines(text)) {
    try {
      out.push(canonicalLine(logical));
    } catch (err) {
      if (err instanceof RequirementError) throw new RequirementError(err.message, line);
      throw err;
    }
  }
  return out;
}
