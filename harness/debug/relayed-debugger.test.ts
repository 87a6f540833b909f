import type { Duplex } from 'node:stream';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { duplexPair } from '../../core/duplex-pair.js';
import type { DebuggerConnection } from '../../core/gdb/debugger-connection.js';
import { DebugLegRefused } from '../../clients/bench/debug-leg.js';
import type { GdbBridge } from './gdb-bridge.js';
import { pumpRelayedDebuggers } from './relayed-debugger.js';

/** A bridge that writes down the connections it was handed, answers each one's bytes with `+`, and ends each that ended its side. */
function fakeBridge() {
  const accepted: DebuggerConnection[] = [];
  const bridge = {
    accept: (connection: DebuggerConnection) => {
      accepted.push(connection);
      connection.onData(() => connection.write('+'));
      // As the slot does for a debugger that ended its side with nothing unanswered.
      connection.onEnd(() => connection.end());
    },
  } as unknown as GdbBridge;
  return { bridge, accepted };
}

describe('pumpRelayedDebuggers', () => {
  it('dials a leg at a time: hands each debugger to the bridge, dials again once it closes or the server asks, and stops on a refusal', async () => {
    const fake = createClock(0);
    const { bridge, accepted } = fakeBridge();
    const dials: string[] = [];
    const [gdb, leg] = duplexPair();
    let debuggerGone: () => void = () => undefined;
    let dialledAgain: () => void = () => undefined;
    const thirdDial = new Promise<void>((resolve) => (dialledAgain = resolve));
    const answers: Array<() => Promise<Duplex | undefined>> = [
      async () => undefined,
      async () => leg,
      () => {
        dialledAgain();
        return new Promise((_resolve, reject) => (debuggerGone = () => reject(new DebugLegRefused('the job ended'))));
      },
    ];
    const link = { debugDial: () => (dials.push('dial'), answers.shift()!()) };
    const pumped = pumpRelayedDebuggers(bridge, { link, jobId: 'job_1', clock: clockFromFakeTimers(fake), signal: new AbortController().signal, retryMs: 100, logError: () => undefined });
    const answered = new Promise<string>((resolve) => gdb.once('data', (data: Buffer) => resolve(data.toString('latin1'))));
    gdb.write('$?#3f');
    expect(await answered).toBe('+');
    expect([dials.length, accepted.length]).toEqual([2, 1]);
    gdb.end();
    await thirdDial;
    expect(accepted[0]!.destroyed).toBe(true);
    debuggerGone();
    await pumped;
    expect(accepted.length).toBe(1);
  });

  it('waits retryMs on the injected clock after the server could not be reached, and stops when the job ends', async () => {
    const fake = createClock(0);
    const { bridge } = fakeBridge();
    const errors: string[] = [];
    let dials = 0;
    const job = new AbortController();
    const link = {
      debugDial: async () => {
        dials += 1;
        throw new Error('ECONNREFUSED');
      },
    };
    const pumped = pumpRelayedDebuggers(bridge, { link, jobId: 'job_1', clock: clockFromFakeTimers(fake), signal: job.signal, retryMs: 100, logError: (m) => errors.push(m) });
    await fake.tickAsync(99);
    expect(dials).toBe(1);
    await fake.tickAsync(1);
    expect(dials).toBe(2);
    await fake.tickAsync(200);
    expect(dials).toBe(3);
    job.abort();
    await pumped;
    expect(errors).toEqual(['job job_1: dialling a debug leg failed; trying again in 100 ms', 'job job_1: dialling a debug leg failed; trying again in 200 ms', 'job job_1: dialling a debug leg failed; trying again in 400 ms']);
  });
});
