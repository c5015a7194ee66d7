// A thin query helper over the pool: named (prepared) statements, transactions, and errors
// mapped once.
import type pg from 'pg';
import { toStoreError } from './errors.ts';

export interface Db {
  query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]>;
  /** Runs `fn` in one transaction on one connection; rolls back if it throws. */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T>;
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

function queryOn(q: Queryable): Db['query'] {
  return async <R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) => {
    try {
      const res = await q.query<R>({ name, text, values });
      return res.rows;
    } catch (err) {
      throw toStoreError(err, name);
    }
  };
}

export function createDb(pool: pg.Pool): Db {
  return {
    query: queryOn(pool),
    tx: async (fn) => {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw toStoreError(err, 'connect');
      }
      const inner: Db = {
        query: queryOn(client),
        tx: (nested) => nested(inner),
      };
      try {
        await client.query('BEGIN');
        const out = await fn(inner);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw toStoreError(err, 'transaction');
      } finally {
        client.release();
      }
    },
  };
}
