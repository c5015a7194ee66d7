// Cards by id: tool calls, tool results, final answers and messages of a project. A card of
// another project is not found, like anything else of another project.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type CallsStore, type Card, CardKind } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse, notFound } from '../errors.ts';
import { ProjectParams, Uuid } from '../schemas.ts';

export const CardOut = z
  .object({
    card_id: z.string(),
    kind: z.enum(CardKind),
    tool_call_id: z.string().nullable(),
    author: z.string(),
    content: z
      .unknown()
      .describe('depends on the kind; a tool result: {status, result?, error?, duration_ms}'),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
  })
  .meta({ id: 'Card' });

export const cardOut = (c: Card) => ({
  card_id: c.card_id,
  kind: c.kind,
  tool_call_id: c.tool_call_id,
  author: c.author,
  content: c.content,
  metadata: c.metadata,
  created_at: c.created_at.toISOString(),
});

export const cardRoutes =
  ({ store, auth }: RouteDeps<CallsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/projects/:project/cards/:card_id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['cards'],
          summary: 'A card of any kind',
          params: ProjectParams.extend({ card_id: Uuid }),
          response: { 200: CardOut, 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse },
        },
      },
      async (req) => {
        const card = await store.cards.byId(req.params.project, req.params.card_id);
        if (!card) throw notFound('card', req.params.card_id);
        return cardOut(card);
      },
    );
  };
