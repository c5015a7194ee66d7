// What real publishers write, read by the function the import's worker runs: an OpenAPI 3.1
// document whose schemas use JSON Schema 2020-12 `$id` scopes, `$defs`, `$anchor` and a
// `$dynamicRef` (a generic paginated list), dotted operation ids, a parameter name that is not
// an identifier and an operation without an id; and a Swagger 2.0 document, converted.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareImport } from './prepare.ts';

const FIXTURES = join(import.meta.dirname, '../../../../tests/fixtures/openapi');
const LIMITS = {
  maxDepth: 128,
  maxOperations: 2_000,
  maxExpansion: 1_000_000,
  maxSchemaDepth: 100,
};
const options = { prefix: 'cat', security: {}, category: 'openapi', tags: [] };

const ITEM = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', maxLength: 100 },
    price: {
      type: 'object',
      required: ['amount', 'currency'],
      properties: {
        amount: { type: 'number' },
        currency: { type: 'string', minLength: 3, maxLength: 3 },
      },
    },
    tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' } },
  },
};

describe('prepareImport', () => {
  it('reads an OpenAPI 3.1 document with $id scopes, anchors and a $dynamicRef', () => {
    const text = readFileSync(join(FIXTURES, 'paged-list-3.1.json'), 'utf8');
    const out = prepareImport(text, options, LIMITS);
    expect(out.skipped).toEqual([]);
    const byName = new Map(out.tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual([
      'cat.catalog_items_create',
      'cat.catalog_items_list',
      'cat.catalog_items_replaceAll',
      'cat.get__items_item_id',
    ]);
    // `#/components/schemas/Money` inside Item (which has an `$id`) is the document's Money;
    // `#/$defs/tag` is Item's own.
    expect(byName.get('cat.catalog_items_create')!.parameters).toMatchObject({
      properties: { body: ITEM },
      required: ['body'],
    });
    // ItemPage = Page (`$ref: page`, relative to ItemPage's `$id`) whose `$dynamicRef: #item`
    // takes ItemPage's `$dynamicAnchor: item`: a page of Items, not of Page's default.
    const page = byName.get('cat.catalog_items_replaceAll')!.parameters as {
      properties: { body: { properties: Record<string, unknown> } };
    };
    expect(page.properties.body.properties['items']).toEqual({ type: 'array', items: ITEM });
    expect(page.properties.body.properties['next']).toMatchObject({ type: ['string', 'null'] });
    // `page.token` is sent under its own name from an argument that can be one.
    expect(byName.get('cat.catalog_items_list')!.spec).toEqual({
      method: 'GET',
      url: 'https://catalog.example.test/v2/items',
      query: ['page_size', 'page_token'],
      query_names: { page_token: 'page.token' },
    });
  });

  it('converts Swagger 2.0, with the conversion in the warnings', () => {
    const text = readFileSync(join(FIXTURES, 'swagger-2.0-store.json'), 'utf8');
    const out = prepareImport(text, { ...options, security: { key: 'store_key' } }, LIMITS);
    expect(out.tools.map((t) => t.name).sort()).toEqual(['cat.getOrder', 'cat.placeOrder']);
    expect(out.skipped).toEqual([
      {
        operation: 'uploadReceipt',
        reason: 'request body media type multipart/form-data is not supported: JSON only',
      },
    ]);
    expect(out.warnings[0]).toMatch(/converted from Swagger 2.0 to OpenAPI 3.0/);
    expect(out.warnings.join('\n')).toMatch(/formData/);
    const get = out.tools.find((t) => t.name === 'cat.getOrder')!;
    expect(get.spec).toEqual({
      method: 'GET',
      url: 'https://store.example.test/api/orders/{orderId}',
      query: ['expand'],
      auth: { type: 'header', header: 'X-Api-Key', secret: 'store_key' },
    });
    // x-nullable became a null type.
    const place = out.tools.find((t) => t.name === 'cat.placeOrder')!.parameters as {
      properties: { body: { properties: { status: unknown } } };
    };
    expect(place.properties.body.properties.status).toEqual({
      type: ['string', 'null'],
      enum: ['placed', 'shipped', null],
    });
  });

  it('skips an operation whose $ref points at nothing, naming it, and imports the rest', () => {
    const out = prepareImport(
      {
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        servers: [{ url: 'https://api.example.test' }],
        paths: {
          '/a': { get: { operationId: 'a', responses: { 200: { description: 'ok' } } } },
          '/b': {
            post: {
              operationId: 'b',
              requestBody: {
                content: { 'application/json': { schema: { $ref: '#/components/schemas/Gone' } } },
              },
              responses: { 200: { description: 'ok' } },
            },
          },
        },
      },
      options,
      LIMITS,
    );
    expect(out.tools.map((t) => t.name)).toEqual(['cat.a']);
    expect(out.skipped).toEqual([
      {
        operation: 'b',
        reason: '$ref "#/components/schemas/Gone" points at nothing in the document',
      },
    ]);
  });
});
