import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { storageFaultAnswer } from '../http/storage-fault-answer.js';
import { ReconnectBackoff } from './reconnect-backoff.js';
import { DatabaseUnavailableError, isDatabaseConnectionFault, isDiskFull, StorageFullError } from './storage-faults.js';

describe('ReconnectBackoff', () => {
  it('pauses from the first pause, doubling per try up to the bound; requests between tries fail at once; an answer resets it', () => {
    const fake = createClock(0);
    const backoff = new ReconnectBackoff(clockFromFakeTimers(fake), { firstMs: 250, maxMs: 1_000, what: 'the test database' });
    backoff.check();
    expect(backoff.away).toBe(false);
    expect(backoff.failed(new Error('down')).retryAfterSeconds).toBe(1);
    expect(() => backoff.check()).toThrow(DatabaseUnavailableError);
    // Failures of requests already on their way count as the same try.
    backoff.failed(new Error('down'));
    fake.tick(250);
    backoff.check();
    backoff.failed(new Error('still down'));
    fake.tick(499);
    expect(() => backoff.check()).toThrow(/trying again in 1 ms/);
    fake.tick(1);
    backoff.failed(new Error('still down'));
    fake.tick(1_000);
    backoff.failed(new Error('still down'));
    fake.tick(999);
    expect(() => backoff.check()).toThrow(DatabaseUnavailableError);
    fake.tick(1);
    backoff.check();
    backoff.succeeded();
    expect(backoff.away).toBe(false);
    expect(backoff.failed(new Error('down again')).message).toMatch(/the test database is not answering \(down again\)/);
  });
});

describe('storage faults', () => {
  it('tells connection faults and full disks from other errors', () => {
    for (const code of ['57P01', '57P03', '08006', 'ECONNREFUSED', 'ENOENT']) expect(isDatabaseConnectionFault(Object.assign(new Error('x'), { code }))).toBe(true);
    expect(isDatabaseConnectionFault(new Error('Connection terminated unexpectedly'))).toBe(true);
    // pg's query_timeout: the connection stayed silent; it is dropped like a lost one.
    expect(isDatabaseConnectionFault(new Error('Query read timeout'))).toBe(true);
    expect(isDatabaseConnectionFault(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    for (const code of ['ENOSPC', 'EDQUOT', 'SQLITE_FULL', '53100']) expect(isDiskFull(Object.assign(new Error('x'), { code }))).toBe(true);
    expect(isDiskFull(Object.assign(new Error('x'), { code: 'EACCES' }))).toBe(false);
  });

  it('are answered 503 and 507 with Retry-After, naming the service; anything else is left to the error handler', () => {
    const away = storageFaultAnswer(new DatabaseUnavailableError('gone', 3), 'bench');
    expect(away).toMatchObject({ status: 503, headers: { 'Retry-After': '3' }, detail: "the bench's database is unavailable (restarting or unreachable); try again in 3 s" });
    const full = storageFaultAnswer(new StorageFullError('full', 60), 'relay');
    expect(full).toMatchObject({ status: 507, headers: { 'Retry-After': '60' }, detail: expect.stringMatching(/^the relay's storage is full/) });
    expect(storageFaultAnswer(new Error('a bug'), 'bench')).toBeUndefined();
  });
});
