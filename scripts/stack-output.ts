// How `pnpm stack` prints its services' log lines: pino's JSON as it is (prefixed with the
// service) when its output is not a terminal or --json was given, readable lines otherwise:
// time, level, service, message, then the line's other fields (the call's ids among them) on the
// same line. pino-pretty does the formatting.
import pinoPretty from 'pino-pretty';

export type LineFormatter = (service: string, line: string) => string;

/** JSON lines, as the services wrote them. */
export const jsonLines: LineFormatter = (service, line) => `[${service}] ${line}`;

/** Readable lines; `colorize` for a terminal that shows colors. */
export function readableLines(colorize: boolean): LineFormatter {
  const pretty = pinoPretty.prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    // The service is the line's name; the process and host are the same on every line.
    ignore: 'pid,hostname,service',
    singleLine: true,
  });
  return (service, line) => {
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return `[${service}] ${line}`;
    }
    if (typeof obj !== 'object' || obj === null || !('level' in obj)) return `[${service}] ${line}`;
    return pretty({ ...obj, name: service }).trimEnd();
  };
}

/** Readable on a terminal unless --json; JSON elsewhere. */
export function stackFormatter(
  argv: readonly string[],
  stdout: { isTTY?: boolean },
): LineFormatter {
  if (argv.includes('--json') || !stdout.isTTY) return jsonLines;
  return readableLines(pinoPretty.isColorSupported);
}
