import type { IncomingMessage } from 'node:http';
import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { RateLimiter, clientAddress, clientKey } from './rate-limit.js';

const limiterAt = (options: { requests: number; perMs: number; maxClients?: number }) => {
  const fake = createClock(0);
  return { fake, limiter: new RateLimiter({ clock: clockFromFakeTimers(fake), ...options }) };
};

describe('RateLimiter', () => {
  it('allows a burst of `requests`, then one every perMs/requests, answering the ms to wait', () => {
    const { fake, limiter } = limiterAt({ requests: 10, perMs: 60_000 });
    for (let i = 0; i < 10; i++) expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(6000);
    fake.tick(5999);
    expect(limiter.take('a')).toBe(1);
    fake.tick(1);
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(6000);
    // Other clients have their own allowance.
    expect(limiter.take('b')).toBe(0);
  });

  it('a refused request spends nothing; a full minute refills the whole burst and no more', () => {
    const { fake, limiter } = limiterAt({ requests: 3, perMs: 60_000 });
    for (let i = 0; i < 3; i++) limiter.take('a');
    for (let i = 0; i < 50; i++) expect(limiter.take('a')).toBe(20_000);
    fake.tick(10 * 60_000);
    for (let i = 0; i < 3; i++) expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBeGreaterThan(0);
  });

  it('a clock that steps back refills nothing', () => {
    const { fake, limiter } = limiterAt({ requests: 1, perMs: 1000 });
    fake.tick(10_000);
    expect(limiter.take('a')).toBe(0);
    fake.setSystemTime(0);
    expect(limiter.take('a')).toBe(1000);
  });

  it('remembers at most maxClients, forgetting the least recently seen first', () => {
    const { limiter } = limiterAt({ requests: 1, perMs: 60_000, maxClients: 3 });
    for (const c of ['a', 'b', 'c']) limiter.take(c);
    limiter.take('a'); // refused, but seen: b is now the oldest
    limiter.take('d');
    expect(limiter.clients).toBe(3);
    expect(limiter.take('a')).toBeGreaterThan(0); // still remembered
    expect(limiter.take('b')).toBe(0); // forgotten, so a fresh bucket
  });

  it('never holds more than maxClients, whatever the traffic (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5000 })), { maxLength: 300 }), (requests) => {
        const { fake, limiter } = limiterAt({ requests: 2, perMs: 10_000, maxClients: 16 });
        for (const [client, waitMs] of requests) {
          fake.tick(waitMs);
          limiter.take(`c${client}`);
          expect(limiter.clients).toBeLessThanOrEqual(16);
        }
      }),
    );
  });

  it('refuses a limit that admits nothing', () => {
    expect(() => limiterAt({ requests: 0, perMs: 60_000 })).toThrow(RangeError);
    expect(() => limiterAt({ requests: 5, perMs: 0 })).toThrow(RangeError);
  });
});

describe('clientKey', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['2001:db8:aa:bbcc:1:2:3:4', '2001:db8:aa:bb00::/56'],
    ['2001:db8:aa:bbff::1', '2001:db8:aa:bb00::/56'],
    ['::1', '::/56'],
  ])('%s -> %s', (address, key) => {
    expect(clientKey(address)).toBe(key);
  });
});

describe('clientAddress', () => {
  const request = (remoteAddress: string, forwardedFor?: string) =>
    ({ socket: { remoteAddress }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } }) as unknown as IncomingMessage;

  it('is the connected address unless proxies are configured: the header is anyone\'s to write', () => {
    expect(clientAddress(request('127.0.0.1', '198.51.100.7'), 0)).toBe('127.0.0.1');
  });

  it('with n trusted proxies, is the address the outermost one saw; entries the client wrote further left are ignored', () => {
    expect(clientAddress(request('10.0.0.2', '198.51.100.7'), 1)).toBe('198.51.100.7');
    expect(clientAddress(request('10.0.0.2', '6.6.6.6, 198.51.100.7'), 1)).toBe('198.51.100.7');
    expect(clientAddress(request('10.0.0.3', '6.6.6.6, 198.51.100.7, 10.0.0.2'), 2)).toBe('198.51.100.7');
    // Fewer entries than proxies: the leftmost there is.
    expect(clientAddress(request('10.0.0.2'), 2)).toBe('10.0.0.2');
  });
});
