// A thin query helper over the pool: named (prepared) statements, and errors mapped once.
import type pg from 'pg';
import { toStoreError } from './errors.ts';

export interface Db {
  query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]>;
}

export function createDb(pool: pg.Pool): Db {
  return {
    query: async <R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) => {
      try {
        const res = await pool.query<R>({ name, text, values });
        return res.rows;
      } catch (err) {
        throw toStoreError(err, name);
      }
    },
  };
}
