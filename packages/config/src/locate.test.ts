import { describe, expect, it } from 'vitest';
import { locateKeys } from './locate.ts';

describe('locateKeys', () => {
  it('finds keys within their own table, skipping comments and blank lines', () => {
    const lines = locateKeys(
      [
        '# url = "top"',
        '[postgres]',
        'url = "pg"',
        '',
        '[nats] # the bus',
        '  # url = "old"',
        '  url = "n"',
      ].join('\n'),
    );
    expect(lines.lineOf(['postgres', 'url'])).toBe(3);
    expect(lines.lineOf(['nats'])).toBe(5);
    expect(lines.lineOf(['nats', 'url'])).toBe(7);
  });

  it('reads quoted and dotted keys and headers', () => {
    const lines = locateKeys(
      [
        '[ "tools" ]',
        '"concurrency" = 1',
        "'max deliver' = 2",
        'a."b.c" = 3',
        '[nats.tls]',
        'ca = "x"',
      ].join('\n'),
    );
    expect(lines.lineOf(['tools', 'concurrency'])).toBe(2);
    expect(lines.lineOf(['tools', 'max deliver'])).toBe(3);
    expect(lines.lineOf(['tools', 'a', 'b.c'])).toBe(4);
    expect(lines.lineOf(['nats', 'tls', 'ca'])).toBe(6);
  });

  it('ignores text inside multi-line strings and arrays that looks like keys or headers', () => {
    const source = [
      '[log]',
      'banner = """',
      '[nats]',
      'level = "x" """',
      'hosts = [',
      '  ["a", "]"],',
      '  [1, 2]',
      ']',
      "raw = '''",
      "url = 1'''",
      'level = "info"',
    ].join('\n');
    const lines = locateKeys(source);
    expect(lines.lineOf(['nats'])).toBeUndefined();
    expect(lines.lineOf(['log', 'level'])).toBe(11);
  });

  it('falls back to the nearest enclosing key that has a line', () => {
    const lines = locateKeys('[tools]\nlimits = { max = 1 }\n');
    expect(lines.lineOf(['tools', 'limits', 'max'])).toBe(2);
    expect(lines.lineOf(['tools', 'missing'])).toBe(1);
    expect(lines.lineOf(['nowhere', 'key'])).toBeUndefined();
  });
});
