// The schema has only integer, string and enum keys today; these tests pin down how the other
// TOML types arrive from the environment, against a template with one key of each.
import { describe, expect, it } from 'vitest';
import { applyEnvOverrides } from './env.ts';

const template = { app: { count: 1, ratio: 0.5, enabled: false, name: '', hosts: ['a'] } };

function override(env: Record<string, string>): Record<string, unknown> {
  const result = applyEnvOverrides({ app: { name: 'file' } }, env, template);
  expect(result.issues).toEqual([]);
  return result.table['app'] as Record<string, unknown>;
}

describe('applyEnvOverrides', () => {
  it('converts values by the type of the key they target', () => {
    expect(
      override({
        CG__APP__COUNT: '-12',
        CG__APP__RATIO: '0.25',
        CG__APP__ENABLED: 'true',
        CG__APP__NAME: '42',
        CG__APP__HOSTS: '["h1", "h2"]',
      }),
    ).toEqual({ count: -12, ratio: 0.25, enabled: true, name: '42', hosts: ['h1', 'h2'] });
    expect(override({ CG__APP__ENABLED: 'false' })['enabled']).toBe(false);
  });

  it('passes text that does not convert through, for the schema to reject', () => {
    expect(
      override({
        CG__APP__COUNT: '',
        CG__APP__RATIO: '1,5',
        CG__APP__ENABLED: 'yes',
        CG__APP__HOSTS: 'h1,h2',
      }),
    ).toEqual({ name: 'file', count: '', ratio: '1,5', enabled: 'yes', hosts: 'h1,h2' });
  });

  it('leaves the input table alone and records which variable set each key', () => {
    const table = { app: { name: 'file' } };
    const result = applyEnvOverrides(
      table,
      { CG__App__Name: 'env', CG_CONFIG: 'x.toml' },
      template,
    );
    expect(table.app.name).toBe('file');
    expect(result.table).toEqual({ app: { name: 'env' } });
    expect([...result.origins]).toEqual([['app.name', 'CG__App__Name']]);
  });

  it('ignores variables without the upper-case CG__ prefix', () => {
    const result = applyEnvOverrides(
      {},
      { cg__app__name: 'a', CG_APP__NAME: 'b', PATH: '/bin' },
      template,
    );
    expect(result).toEqual({ table: {}, origins: new Map(), issues: [] });
  });

  it('reports two variables that set the same key', () => {
    const both = applyEnvOverrides({}, { CG__APP__NAME: 'a', CG__app__name: 'b' }, template);
    expect(both.issues).toEqual([
      { source: 'env CG__app__name', key: 'app.name', message: 'also set by CG__APP__NAME' },
    ]);
  });
});
