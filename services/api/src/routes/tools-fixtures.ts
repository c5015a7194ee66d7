// An external tool as the tools tests register it: a web search with a typical JSON Schema.
export const searchParams = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
    since: { type: 'string', format: 'date-time' },
  },
  required: ['query'],
  additionalProperties: false,
};
export const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: 'Search the web for pages about a query',
  parameters: searchParams,
  ...extra,
});
