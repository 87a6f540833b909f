import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { simThreadFaults } from '../../test/support/faulty-sim-thread.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import { THUMB_HELLO_BKPT_5, THUMB_SPIN, thumbProgram } from '../../test/support/sim-programs.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { BackendError, type Device, type GdbStream } from '../backend.js';
import { SimBackend, type SimBackendOptions } from './sim-backend.js';

/**
 * A crashed or hung engine fails its own job with the reason and never takes the host down: the
 * engines of test/support/faulty-sim-thread.ts fail on purpose 2 ms into a run, while a healthy
 * device of the same backend runs beside them.
 */
const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const faultyPico = (fault: keyof typeof simThreadFaults): Board => ({ ...pico, id: `pico${simThreadFaults[fault]}` });
const threadEntry = new URL('../../test/support/faulty-sim-thread.ts', import.meta.url);
const backend = (options: Partial<SimBackendOptions> = {}) => new SimBackend({ clock: systemClock, threadEntry, onUnmodelled: () => undefined, ...options });
const spin = firmwareImage(thumbProgram(THUMB_SPIN).bytes);
const hello = firmwareImage(thumbProgram(THUMB_HELLO_BKPT_5).bytes);

async function rejection(promise: Promise<unknown>): Promise<BackendError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BackendError);
  return error as BackendError;
}

/** A healthy pico on `sim`, flashed with a program that prints and stops. */
async function healthyRun(sim: SimBackend): Promise<void> {
  const device = await sim.open(pico);
  try {
    await device.flash(hello);
    await expect(device.run(10_000_000)).resolves.toMatchObject({ reason: 'crashed', message: expect.stringMatching(/bkpt #5/) });
  } finally {
    await device.close();
  }
}

describe('sim engine threads: faults', () => {
  it('an engine that throws fails its run with the reason; the device and its thread go on', async () => {
    const sim = backend();
    const device = await sim.open(faultyPico('throws'));
    await device.flash(spin);
    const error = await rejection(device.run(10_000_000));
    expect(error.kind).toBe('internal');
    expect(error.message).toMatch(/the simulator failed unexpectedly while simulating pico-throws: engine exploded/);
    // The thread answered: a fresh chip runs up to the fault again.
    await device.reset();
    await expect(device.run(1_000_000)).resolves.toMatchObject({ reason: 'elapsed' });
    await device.close();
  });

  for (const [fault, reason] of [
    ['exits', /the simulator thread of pico-exits exited with code 7/],
    ['uncaught', /the simulator thread of pico-uncaught failed: engine exploded outside a request/],
  ] as const) {
    it(`a thread that ${fault === 'exits' ? 'exits' : 'throws outside a request'} fails its device's run with the reason, while another device runs on`, async () => {
      const sim = backend();
      const broken = await sim.open(faultyPico(fault));
      await broken.flash(spin);
      const [error] = await Promise.all([rejection(broken.run(10_000_000)), healthyRun(sim)]);
      expect(error.kind).toBe('internal');
      expect(error.message).toMatch(reason);
      // The device says why on every later use, and closes cleanly; the backend opens fresh threads.
      expect((await rejection(broken.reset())).message).toMatch(reason);
      await broken.close();
      await healthyRun(sim);
    });
  }

  it('a hung engine fails its run as a timeout once its thread shows no sign of life for the bound, and is terminated', async () => {
    const fake = createClock(0);
    const answerWithinMs = 5_000;
    const sim = backend({ watchdogClock: clockFromFakeTimers(fake), answerWithinMs });
    const device: Device = await sim.open(faultyPico('hangs'));
    await device.flash(spin);
    const hanging = new Promise<void>((resolve) => device.onUart((chunk) => new TextDecoder().decode(chunk.bytes) === 'hanging\n' && resolve()));
    const run = rejection(device.run(600_000_000_000));
    await hanging;
    // The engine now loops inside one slice. The watchdog looks every `answerWithinMs`: the first
    // look still sees the beats from before the hang, the second sees none since.
    fake.tick(answerWithinMs);
    fake.tick(answerWithinMs);
    const error = await run;
    expect(error.kind).toBe('timeout');
    expect(error.message).toMatch(/the simulator thread of pico-hangs showed no sign of life for 5000 ms of host time while running: the engine hung; the thread was terminated/);
    await device.close();
    await healthyRun(backend());
  });
});

/** Sends `packet` to the debugger's stream and resolves with the payload of the next packet back; rejects with why the stream ended first. */
function exchange(stream: GdbStream, packet: string): Promise<string> {
  return new Promise((resolve, reject) => {
    void stream.closed.then(({ reason }) => reject(new Error(`the stream ended before a reply to ${packet}: ${reason}`)));
    let seen = '';
    const stop = stream.onData((text) => {
      seen += text;
      const reply = /\$([^#]*)#[0-9a-f]{2}/.exec(seen);
      if (!reply) return;
      stop();
      resolve(reply[1]!);
    });
    stream.write(rspPacket(packet));
  });
}

describe('sim engine threads: a debugger attached', () => {
  it('a target halted in the debugger is not hung however long it waits; one that hangs under continue ends the session as a timeout', async () => {
    const fake = createClock(0);
    const answerWithinMs = 5_000;
    const sim = backend({ watchdogClock: clockFromFakeTimers(fake), answerWithinMs });
    const device = await sim.open(faultyPico('hangs'));
    await device.flash(spin);
    const stream = await device.debug!.attach();
    expect(await exchange(stream, '?')).toMatch(/^[ST]05/);
    // Halted, waiting for the debugger: ten looks of the watchdog with no sign of life.
    for (let look = 0; look < 10; look++) fake.tick(answerWithinMs);
    expect(await exchange(stream, 'g')).toMatch(/^[0-9a-f]+$/);

    const hanging = new Promise<void>((resolve) => device.onUart((chunk) => new TextDecoder().decode(chunk.bytes) === 'hanging\n' && resolve()));
    stream.write(rspPacket('c'));
    await hanging;
    // Running under the debugger, the engine now loops inside one slice: silence counts. Three
    // looks: the first may still see the beat of the slice after the announcement.
    for (let look = 0; look < 3; look++) fake.tick(answerWithinMs);
    const { reason } = await stream.closed;
    expect(reason).toMatch(
      /the simulator thread of pico-hangs showed no sign of life for 5000 ms of host time while serving the debugger: the engine hung; the thread was terminated/,
    );
    expect((await rejection(device.run(1_000_000))).kind).toBe('timeout');
    await device.close();
  });
});
