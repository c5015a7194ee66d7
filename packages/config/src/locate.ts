// Finds the line where a key is written in a TOML source. smol-toml returns values without
// positions, so error messages would otherwise name a key but not where to look. This is a
// scanner, not a parser: it runs after smol-toml accepted the text, and only needs to tell table
// headers and `key =` lines apart from the inside of strings, arrays and inline tables.

/** Maps a key path (`['nats', 'url']`) to the 1-based line that defines it. */
export interface KeyLines {
  /** The line of the key itself, or of its nearest enclosing table or key that has a line. */
  lineOf(path: readonly string[]): number | undefined;
}

export function locateKeys(source: string): KeyLines {
  const lines = new Map<string, number>();
  const record = (path: readonly string[], line: number): void => {
    // Array-of-tables and repeated dotted prefixes: the first occurrence is the one to show.
    for (let i = 1; i <= path.length; i++) {
      const id = pathId(path.slice(0, i));
      if (!lines.has(id)) lines.set(id, line);
    }
  };

  let table: string[] = [];
  const value = new ValueScanner();
  source.split(/\r?\n/).forEach((text, index) => {
    const line = index + 1;
    if (value.open) {
      value.scan(text);
      return;
    }
    const trimmed = text.trimStart();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    if (trimmed.startsWith('[')) {
      const header = readKey(trimmed, trimmed.startsWith('[[') ? 2 : 1);
      if (header) {
        table = header.path;
        record(table, line);
      }
      return;
    }
    const key = readKey(trimmed, 0);
    if (!key) return;
    record([...table, ...key.path], line);
    const equals = trimmed.indexOf('=', key.end);
    if (equals >= 0) value.scan(trimmed.slice(equals + 1));
  });

  return {
    lineOf(path) {
      for (let i = path.length; i > 0; i--) {
        const line = lines.get(pathId(path.slice(0, i)));
        if (line !== undefined) return line;
      }
      return undefined;
    },
  };
}

function pathId(path: readonly string[]): string {
  return JSON.stringify(path);
}

/** Reads a dotted key (`a."b.c".'d'`) starting at `start`; `end` is the index after it. */
function readKey(text: string, start: number): { path: string[]; end: number } | undefined {
  const path: string[] = [];
  let i = start;
  for (;;) {
    while (text[i] === ' ' || text[i] === '\t') i++;
    const quote = text[i];
    if (quote === '"' || quote === "'") {
      let part = '';
      i++;
      while (i < text.length && text[i] !== quote) {
        // Escapes only matter in basic strings; a literal string has none.
        if (quote === '"' && text[i] === '\\') {
          const escape = readEscape(text, i);
          part += escape.char;
          i = escape.end;
        } else {
          part += text[i];
          i++;
        }
      }
      if (i >= text.length) return undefined;
      i++;
      path.push(part);
    } else {
      const bare = /^[A-Za-z0-9_-]+/.exec(text.slice(i));
      if (!bare) return undefined;
      path.push(bare[0]);
      i += bare[0].length;
    }
    while (text[i] === ' ' || text[i] === '\t') i++;
    if (text[i] !== '.') return { path, end: i };
    i++;
  }
}

function readEscape(text: string, start: number): { char: string; end: number } {
  const kind = text[start + 1] ?? '';
  const width = kind === 'u' ? 4 : kind === 'U' ? 8 : 0;
  if (width > 0) {
    const code = Number.parseInt(text.slice(start + 2, start + 2 + width), 16);
    const char = Number.isNaN(code) ? kind : String.fromCodePoint(code);
    return { char, end: start + 2 + width };
  }
  const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', e: '\x1b' };
  return { char: simple[kind] ?? kind, end: start + 2 };
}

/**
 * Follows a value across lines: multi-line strings, arrays and inline tables can span several
 * lines, and anything inside them that looks like `[header]` or `key =` is not one.
 */
class ValueScanner {
  private depth = 0;
  private string: '"""' | "'''" | undefined;

  get open(): boolean {
    return this.depth > 0 || this.string !== undefined;
  }

  scan(text: string): void {
    let i = 0;
    while (i < text.length) {
      if (this.string) {
        if (this.string === '"""' && text[i] === '\\') {
          i += 2;
          continue;
        }
        if (text.startsWith(this.string, i)) {
          // Up to two quotes just before the closing delimiter belong to the value, so the
          // delimiter is the last three quotes of the run.
          const quote = this.string[0];
          let run = 3;
          while (run < 5 && text[i + run] === quote) run++;
          this.string = undefined;
          i += run;
          continue;
        }
        i++;
        continue;
      }
      const char = text[i];
      if (char === '#') return;
      if (text.startsWith('"""', i) || text.startsWith("'''", i)) {
        this.string = text.slice(i, i + 3) as '"""' | "'''";
        i += 3;
      } else if (char === '"' || char === "'") {
        i = skipSingleLineString(text, i);
      } else {
        if (char === '[' || char === '{') this.depth++;
        if (char === ']' || char === '}') this.depth = Math.max(0, this.depth - 1);
        i++;
      }
    }
  }
}

function skipSingleLineString(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length && text[i] !== quote) i += quote === '"' && text[i] === '\\' ? 2 : 1;
  return i + 1;
}
