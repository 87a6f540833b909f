import { describe, expect, it } from 'vitest';
import { LookupLimiter } from './lookup-limiter.js';

const HOUR_MS = 3600_000;

describe('LookupLimiter', () => {
  it('allows n lookups per caller in any hour, counts callers apart, and says when the next one is allowed', () => {
    const limiter = new LookupLimiter(2);
    expect(limiter.take('a', 1000)).toEqual({ ok: true });
    expect(limiter.take('a', 2000)).toEqual({ ok: true });
    expect(limiter.take('b', 2000)).toEqual({ ok: true });
    expect(limiter.take('a', 3000)).toEqual({ ok: false, retryAfterSeconds: 3598 });
    // A refused lookup does not count: exactly one hour after the first, one more is allowed.
    expect(limiter.take('a', 1000 + HOUR_MS)).toEqual({ ok: true });
    expect(limiter.take('a', 1001 + HOUR_MS)).toMatchObject({ ok: false });
  });

  it('forgets the least recently seen callers beyond its bound', () => {
    const limiter = new LookupLimiter(1, 2);
    limiter.take('a', 0);
    limiter.take('b', 0);
    limiter.take('c', 0);
    expect(limiter.take('a', 1)).toEqual({ ok: true });
    expect(limiter.take('c', 1)).toMatchObject({ ok: false });
  });
});
