import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BoundedCache } from './bounded-cache.js';

describe('BoundedCache', () => {
  it('forgets the least recently used entry first', () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set('a', 1).set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now younger than b
    cache.set('c', 3);
    expect(cache.has('b')).toBe(false);
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('keeps an undefined value apart from a missing key', () => {
    const cache = new BoundedCache<string, number | undefined>(4);
    cache.set('x', undefined);
    expect(cache.has('x')).toBe(true);
    expect(cache.has('y')).toBe(false);
  });

  it('refuses a size below one', () => {
    expect(() => new BoundedCache(0)).toThrow(RangeError);
  });

  it('never holds more than maxEntries and always holds the last one set (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.tuple(fc.constantFrom('get', 'set', 'delete'), fc.integer({ min: 0, max: 8 }))), (max, ops) => {
        const cache = new BoundedCache<number, number>(max);
        for (const [op, key] of ops) {
          if (op === 'set') {
            cache.set(key, key * 10);
            expect(cache.get(key)).toBe(key * 10);
          } else if (op === 'get') {
            const v = cache.get(key);
            if (v !== undefined) expect(v).toBe(key * 10);
          } else cache.delete(key);
          expect(cache.size).toBeLessThanOrEqual(max);
        }
      }),
    );
  });
});
