import { describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { policiesOf } from './policies.ts';

const configDefaults = loadConfig({ env: {} });

describe('policiesOf', () => {
  it('takes the tool options over the [tools] defaults', () => {
    const p = policiesOf(
      {
        timeout_ms: 5000,
        rate_limit: { per_minute: 120 },
        retries: { max: 4, base_ms: 50 },
        cost: { per_call: 0.5 },
      },
      configDefaults.tools,
    );
    expect(p).toEqual({
      ok: true,
      policies: {
        timeoutMs: 5000,
        rateLimit: { perSecond: 2, burst: 10, maxWaitMs: 5000 },
        retries: { max: 4, baseMs: 50, maxMs: 5000 },
        cost: { per_call: 0.5, per_second: 0, currency: 'USD' },
      },
    });
  });

  it('has no rate limit by default, and refuses options it cannot read', () => {
    const p = policiesOf({}, configDefaults.tools);
    expect(p.ok && p.policies.rateLimit).toBeUndefined();
    expect(p.ok && p.policies.retries.max).toBe(2);
    expect(policiesOf({ retries: 3 }, configDefaults.tools).ok).toBe(false);
    expect(policiesOf({ surprise: true }, configDefaults.tools).ok).toBe(false);
  });
});
