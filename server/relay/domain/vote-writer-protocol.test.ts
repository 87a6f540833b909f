import { describe, expect, it } from 'vitest';
import { storageFaultAnswer } from '../../http/storage-fault-answer.js';
import { receivedError, sendableError } from './vote-writer-protocol.js';

/** An error crossing the vote writer thread's boundary (decision 0921) keeps what the error handler decides by. */
describe('vote writer protocol errors', () => {
  it.each(['SQLITE_FULL', 'ENOSPC'])("keeps a driver's code %s, so a full disk is the 507 with Retry-After it is on the event loop", (code) => {
    const thrown = Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code });
    const onLoop = storageFaultAnswer(thrown, 'relay');
    const rebuilt = receivedError(structuredClone(sendableError(thrown)));
    expect((rebuilt as Error & { code?: unknown }).code).toBe(code);
    const viaThread = storageFaultAnswer(rebuilt, 'relay');
    expect(onLoop?.status).toBe(507);
    expect(viaThread?.status).toBe(onLoop?.status);
    expect(viaThread?.headers).toEqual(onLoop?.headers);
  });

  it('rebuilds an error without a code without one (still a 500)', () => {
    const rebuilt = receivedError(structuredClone(sendableError(new TypeError('boom'))));
    expect('code' in rebuilt).toBe(false);
    expect(storageFaultAnswer(rebuilt, 'relay')).toBeUndefined();
  });
});
