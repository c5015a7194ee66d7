// Printing: JSON for scripts (--json), short aligned text for people. Results go to stdout;
// progress and errors to stderr, so `toolmesh ... --json | jq` always sees clean JSON.
import type { Readable, Writable } from 'node:stream';

export interface Io {
  stdout: Writable;
  stderr: Writable;
  /** Only `mcp serve` reads it (the MCP client's messages). */
  stdin?: Readable;
}

export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(io: Io, line: string): void {
  io.stdout.write(`${line}\n`);
}

/** A table of rows, one line each; missing values print as `-`. */
export function printTable(io: Io, rows: Record<string, unknown>[], columns: string[]): void {
  const cell = (v: unknown): string =>
    v === null || v === undefined || v === '' ? '-' : typeof v === 'string' ? v : JSON.stringify(v);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  printLine(io, line(columns.map((c) => c.toUpperCase())));
  for (const r of rows) printLine(io, line(columns.map((c) => cell(r[c]))));
}
