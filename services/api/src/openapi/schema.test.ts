// OpenAPI 3.0 schema objects translated to the draft 2020-12 the registry checks strictly.
import { describe, expect, it } from 'vitest';
import { checkSchema } from '@toolmesh/json-schema';
import { toJsonSchema } from './schema.ts';

describe('toJsonSchema', () => {
  it("translates 3.0's nullable, boolean exclusive bounds and example", () => {
    const out = toJsonSchema({
      type: 'object',
      properties: {
        age: { type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 150 },
        nick: { type: 'string', nullable: true, enum: ['a', 'b'], example: 'a' },
        kind: { type: 'string', exclusiveMaximum: false },
      },
    });
    expect(out).toEqual({
      type: 'object',
      properties: {
        age: { type: 'integer', exclusiveMinimum: 0, maximum: 150 },
        nick: { type: ['string', 'null'], enum: ['a', 'b', null], examples: ['a'] },
        kind: { type: 'string' },
      },
    });
    expect(checkSchema(out)).toEqual({ ok: true });
  });

  it('drops what a strict JSON Schema check refuses, and widens a recursive $ref to any', () => {
    const out = toJsonSchema({
      type: 'object',
      xml: { name: 'pet' },
      discriminator: { propertyName: 'kind' },
      externalDocs: { url: 'https://example.test' },
      'x-internal': true,
      properties: {
        id: { type: 'integer', format: 'int64' },
        color: { type: 'string', format: 'rgb-hex' },
        parent: { $ref: '#/components/schemas/Node' },
      },
    });
    expect(out).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer', format: 'int64' },
        color: { type: 'string' },
        parent: {},
      },
    });
    expect(checkSchema(out)).toEqual({ ok: true });
  });
});
