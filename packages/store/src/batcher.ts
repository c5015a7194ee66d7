// The turn files (turns.ts and its neighbours) stay at the package root while issue 36's turn
// redesign rewrites them; until they move into agents/, they reach their neighbours through
// these forwarders. Delete each with that move.
export { createBatcher } from './core/batcher.ts';
export type { Batcher, BatcherOptions } from './core/batcher.ts';
