import { describe, expect, it } from 'vitest';
import {
  checkSchema,
  compileRe2,
  createProjectValidators,
  SchemaCompileError,
  UnsupportedPatternError,
  schemaExpansion,
  branchingRecursion,
} from './index.ts';

const EVIL = '^(a+)+$';
const ATTACK = `${'a'.repeat(50_000)}!`;

describe('compileRe2', () => {
  it('matches a catastrophic pattern against a long adversarial string in linear time', () => {
    // A backtracking engine would not finish this in the age of the universe: the test's
    // timeout is the check, not a stopwatch (no timing assertion to trip on a loaded machine).
    expect(compileRe2(EVIL).test(ATTACK)).toBe(false);
    expect(compileRe2(EVIL).test('aaaa')).toBe(true);
  }, 60_000);

  it('understands the JavaScript spellings JSON Schema patterns use', () => {
    expect(compileRe2('^\\u00e9+$').test('éé')).toBe(true);
    expect(compileRe2('^\\d{3}-\\w+$').test('123-abc')).toBe(true);
    expect(compileRe2('^\\p{L}+$').test('héllo')).toBe(true);
    expect(compileRe2('b').test('abc')).toBe(true); // unanchored, as JSON Schema says
  });

  it('refuses lookaround and backreferences, naming the engine', () => {
    for (const p of ['(?=a)a', '(?!a)b', '(a)\\1']) {
      expect(() => compileRe2(p)).toThrow(UnsupportedPatternError);
      expect(() => compileRe2(p)).toThrow(/linear-time engine \(RE2\)/);
    }
  });
});

describe('checkSchema', () => {
  it('accepts a schema with patterns and patternProperties RE2 runs', () => {
    expect(
      checkSchema({
        type: 'object',
        properties: { q: { type: 'string', pattern: EVIL } },
        patternProperties: { '^x-': { type: 'string' } },
      }),
    ).toEqual({ ok: true });
  });

  it('refuses a pattern RE2 cannot run as a compile failure', () => {
    const r = checkSchema({ type: 'object', properties: { q: { pattern: '(a)\\1' } } });
    expect(r).toMatchObject({ ok: false, reason: 'compile' });
    expect(r.ok ? '' : r.message).toMatch(/RE2/);
    const pp = checkSchema({ type: 'object', patternProperties: { '(?<=x)y': {} } });
    expect(pp).toMatchObject({ ok: false, reason: 'compile' });
  });

  it('is strict, and says which check failed', () => {
    expect(checkSchema({ type: 'object', requried: ['a'] })).toMatchObject({ reason: 'compile' });
    expect(checkSchema({ type: 'nope' })).toMatchObject({ reason: 'invalid' });
    expect(
      checkSchema({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }),
    ).toMatchObject({ reason: 'meta_schema' });
  });

  it('keeps nothing of one check for the next: an $id can be registered twice', () => {
    const s = { $id: 'https://example.com/same', type: 'object' };
    expect(checkSchema(s)).toEqual({ ok: true });
    expect(checkSchema({ ...s })).toEqual({ ok: true });
    // A $ref to an $id another check saw does not resolve.
    expect(
      checkSchema({ type: 'object', properties: { a: { $ref: 'https://example.com/same' } } }),
    ).toMatchObject({ ok: false, reason: 'compile' });
  });
});

describe('createProjectValidators', () => {
  const withItem = (type: string) => ({
    $id: 'https://example.com/tool',
    type: 'object',
    $defs: { item: { $id: 'https://example.com/item', type } },
    properties: { x: { $ref: 'https://example.com/item' } },
  });

  it('validates with a catastrophic pattern in linear time', () => {
    const v = createProjectValidators();
    const validate = v.get('p', 't@1', {
      type: 'object',
      properties: { q: { type: 'string', pattern: EVIL } },
      patternProperties: { '^(b+)+$': { type: 'string' } },
    });
    // As above: a backtracking engine never returns; the test's timeout is the check.
    expect(validate({ q: ATTACK })).toBe(false);
    expect(validate({ q: 'aaa', [`${'b'.repeat(50_000)}!`]: 1 })).toBe(true);
  }, 60_000);

  it('keeps projects apart: the same $id means what each project says', () => {
    const v = createProjectValidators();
    const a = v.get('a', 't@1', withItem('string'));
    const b = v.get('b', 't@1', withItem('integer'));
    expect([a({ x: 's' }), a({ x: 1 })]).toEqual([true, false]);
    expect([b({ x: 's' }), b({ x: 1 })]).toEqual([false, true]);
    // A project cannot reach another project's $id.
    expect(() =>
      v.get('c', 't@1', {
        type: 'object',
        properties: { x: { $ref: 'https://example.com/item' } },
      }),
    ).toThrow(SchemaCompileError);
  });

  it('caches per key, remembers a compile failure, and stays bounded', () => {
    const v = createProjectValidators({ maxProjects: 2, maxPerProject: 3 });
    const s = { type: 'object' };
    expect(v.get('p', 'k', s)).toBe(v.get('p', 'k', s));
    const bad = { type: 'object', properties: { a: { pattern: '(?=x)' } } };
    expect(() => v.get('p', 'bad', bad)).toThrow(SchemaCompileError);
    expect(() => v.get('p', 'bad', bad)).toThrow(/RE2/);
    for (let i = 0; i < 10; i++) v.get('p', `k${i}`, { type: 'object' });
    expect(v.size()).toEqual({ projects: 1, validators: 3 });
    v.get('q', 'k', s);
    v.get('r', 'k', s);
    expect(v.size()).toEqual({ projects: 2, validators: 2 });
  });
});

describe('patterns of one instance', () => {
  it('each keep their own matcher', () => {
    const v = createProjectValidators();
    const validate = v.get('p', 'k', {
      type: 'object',
      properties: { a: { pattern: '^a+$' }, b: { pattern: '^b+$' } },
      patternProperties: { '^x-': { type: 'string' } },
    });
    expect(validate({ a: 'aa', b: 'bb', 'x-1': 's' })).toBe(true);
    expect(validate({ a: 'bb' })).toBe(false);
    expect(validate({ b: 'aa' })).toBe(false);
    expect(validate({ 'x-1': 1 })).toBe(false);
    expect(v.get('p', 'k2', { type: 'string', pattern: '^c$' })('a')).toBe(false);
  });
});

describe('uniqueItems', () => {
  it('is checked in linear time, with JSON Schema equality', () => {
    const v = createProjectValidators();
    const validate = v.get('p', 'u', {
      type: 'object',
      properties: { q: { type: 'array', uniqueItems: true }, r: { uniqueItems: false } },
    });
    // ajv's own pairwise check took 16 s for 20,000 one-element arrays (a busy 2-core host), four
    // times that per doubling: 200,000 would take about half an hour, the linear check under a
    // second. The test's timeout is the check, not a stopwatch (vitest fails a synchronous test
    // that ran past it, even though it cannot interrupt one).
    const many = Array.from({ length: 200_000 }, (_, i) => [i]);
    expect(validate({ q: many })).toBe(true);
    expect(validate({ q: [...many, [199_999]] })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/q', keyword: 'uniqueItems' });
    expect(
      validate({
        q: [
          { a: 1, b: [2] },
          { b: [2], a: 1.0 },
        ],
      }),
    ).toBe(false);
    expect(validate({ q: [1, '1', true, null, [1], { a: 1 }] })).toBe(true);
    expect(validate({ r: [1, 1] })).toBe(true);
    let deep: unknown = 0;
    for (let i = 0; i < 1_000; i++) deep = [deep];
    expect(validate({ q: [deep] })).toBe(true);
    expect(validate({ q: [deep, 1] })).toBe(false);
    expect(checkSchema({ type: 'object', properties: { q: { uniqueItems: true } } })).toEqual({
      ok: true,
    });
    expect(
      checkSchema({ type: 'object', properties: { q: { uniqueItems: 'yes' } } }),
    ).toMatchObject({
      ok: false,
    });
  }, 60_000);
});

describe('pattern size', () => {
  it('refuses a pattern, or a schema of patterns, too large to run fast', () => {
    expect(() => compileRe2('[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}')).toThrow(
      /states, over the limit of 2500/,
    );
    expect(compileRe2('^\\w{1,1000}$').test('abc')).toBe(true);
    const big = (n: number) => ({
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`p${i}`, { pattern: `^\\w{1,1000}$x${i}` }]),
      ),
    });
    expect(checkSchema(big(2))).toEqual({ ok: true });
    const r = checkSchema(big(3));
    expect(r).toMatchObject({ ok: false, reason: 'compile' });
    expect(r.ok ? '' : r.message).toMatch(/more than 5000 states in total/);
  });
});

describe('schemaExpansion', () => {
  const chain = (n: number, ref = (i: number) => `#/$defs/a${i}`) => {
    const defs: Record<string, unknown> = { a0: { type: 'string' } };
    for (let i = 1; i <= n; i++)
      defs[`a${i}`] = { allOf: [{ $ref: ref(i - 1) }, { $ref: ref(i - 1) }] };
    return { type: 'object', $defs: defs, properties: { x: { $ref: ref(n) } } };
  };

  it('counts schema paths through $ref and applicators', () => {
    expect(schemaExpansion({ type: 'object', properties: { a: {}, b: { items: {} } } })).toBe(4);
    expect(schemaExpansion(chain(3))).toBe(31);
    // Recursion counts once.
    const tree = {
      $defs: { n: { properties: { kids: { items: { $ref: '#/$defs/n' } } } } },
      $ref: '#/$defs/n',
    };
    expect(schemaExpansion(tree)).toBeLessThan(10);
  });

  it('refuses a doubling $ref chain, also through $id and $anchor refs', () => {
    const byPointer = checkSchema(chain(40));
    expect(byPointer).toMatchObject({ ok: false, reason: 'compile' });
    expect(byPointer.ok ? '' : byPointer.message).toMatch(/expands to more than 20000/);
    const byId = chain(40);
    for (const [k, d] of Object.entries(byId.$defs))
      (d as Record<string, unknown>)['$id'] = `https://x.example/${k}`;
    const ided = JSON.parse(
      JSON.stringify(byId).replace(/#\/\$defs\/(a\d+)/g, 'https://x.example/$1'),
    );
    expect(schemaExpansion(ided)).toBeGreaterThan(20_000);
    const anchored = JSON.parse(JSON.stringify(chain(40)).replace(/#\/\$defs\/(a\d+)/g, '#$1'));
    for (const [k, d] of Object.entries(anchored.$defs))
      (d as Record<string, unknown>)['$anchor'] = k;
    expect(schemaExpansion(anchored)).toBeGreaterThan(20_000);
    const v = createProjectValidators();
    expect(() => v.get('p', 'k', chain(40))).toThrow(/expands to more than/);
    expect(checkSchema(chain(10))).toEqual({ ok: true });
  });
});

describe('branchingRecursion', () => {
  it('refuses recursion that reaches one value twice, keeps trees and JSON-value schemas', () => {
    const evil = {
      type: 'object',
      anyOf: [
        { properties: { a: { $ref: '#' } }, required: ['b'] },
        { properties: { a: { $ref: '#' } }, required: ['c'] },
      ],
    };
    expect(branchingRecursion(evil)).toMatch(/refers back to itself twice.*\.a/);
    expect(checkSchema(evil)).toMatchObject({ ok: false, reason: 'compile' });
    const viaItems = { anyOf: [{ items: { $ref: '#' } }, { prefixItems: [{ $ref: '#' }] }] };
    expect(branchingRecursion(viaItems)).toBeDefined();
    const tree = {
      $defs: {
        n: {
          type: 'object',
          properties: { left: { $ref: '#/$defs/n' }, right: { $ref: '#/$defs/n' } },
        },
      },
      type: 'object',
      properties: { root: { $ref: '#/$defs/n' } },
    };
    expect(branchingRecursion(tree)).toBeUndefined();
    const json = {
      $defs: {
        v: {
          anyOf: [
            { type: ['null', 'boolean', 'number', 'string'] },
            { type: 'array', items: { $ref: '#/$defs/v' } },
            { type: 'object', additionalProperties: { $ref: '#/$defs/v' } },
          ],
        },
      },
      type: 'object',
      properties: { value: { $ref: '#/$defs/v' } },
    };
    expect(branchingRecursion(json)).toBeUndefined();
    expect(checkSchema(json)).toEqual({ ok: true });
    expect(checkSchema(tree)).toEqual({ ok: true });
  });

  it('does not count non-recursive shared definitions against its budget', () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) {
      defs[`d${i}`] = {
        type: 'object',
        properties: Object.fromEntries(
          Array.from({ length: 40 }, (_, j) => [`f${j}`, { type: 'string', maxLength: j + 1 }]),
        ),
      };
    }
    const schema = {
      type: 'object',
      $defs: defs,
      properties: Object.fromEntries(Object.keys(defs).map((k) => [k, { $ref: `#/$defs/${k}` }])),
    };
    expect(branchingRecursion(schema)).toBeUndefined();
    expect(checkSchema(schema)).toEqual({ ok: true });
  });

  it('is refused on the validation path too', () => {
    const v = createProjectValidators();
    expect(() =>
      v.get('p', 'k', {
        anyOf: [{ properties: { a: { $ref: '#' } } }, { properties: { a: { $ref: '#' } } }],
      }),
    ).toThrow(/twice/);
  });
});
