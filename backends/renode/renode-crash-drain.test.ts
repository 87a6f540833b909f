import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { writeLateUartQemu } from '../../test/fakes/renode-standin/late-uart-qemu.js';
import { backend, board, caught, image, pidOf } from '../../test/fakes/renode-standin/standin-renode-backend.js';
import { type Device, NANOS_PER_SECOND } from '../backend.js';

/** The Renode backend's crash drain (docs/backends/renode.md), against the stand-in with a late UART. */

describe('RenodeBackend crash drain: UART bytes read after the CPU abort line', () => {
  // Nothing orders Renode's abort log line and its UART socket; this wrapper makes the stand-in
  // log the abort before it hands over the crash line (test/fakes/renode-standin/late-uart-qemu.ts).
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'hbr-late-uart-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const lateQemu = (delaySeconds: number) => writeLateUartQemu(mkdtempSync(path.join(scratch, 'q-')), delaySeconds);
  const crashLine = 'hilbench crash board=stm32f4-discovery: jumping to 0xfffffff0 (execute-never) with no fault handler\r\n';

  function capture(device: Device) {
    const seen = { text: '' };
    device.onUart((chunk) => (seen.text += new TextDecoder().decode(chunk.bytes)));
    return seen;
  }

  it('keeps reading the socket until it is quiet, so the crash line is in the run', async () => {
    const device = await backend({ RENODE_STANDIN_QEMU: lateQemu(0.1) }).open(board);
    try {
      const seen = capture(device);
      await device.flash(image('crash'));
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed', message: expect.stringContaining('CPU abort') });
      expect(seen.text).toBe(crashLine);
      expect(device.droppedUartBytes).toBe(0);
    } finally {
      await device.close();
    }
  });

  it('counts what arrives after the drain window as dropped, never delivering it late', async () => {
    const device = await backend({ RENODE_STANDIN_QEMU: lateQemu(0.5) }, { drainQuietMs: 1, drainTimeoutMs: 1 }).open(board);
    try {
      const seen = capture(device);
      await device.flash(image('crash'));
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      await waitUntil(systemClock, () => (device.droppedUartBytes >= crashLine.length ? true : undefined), {
        timeoutMs: 10_000,
        describe: 'the late crash line to be counted as dropped',
        lastSeen: () => `dropped ${device.droppedUartBytes}, delivered ${JSON.stringify(seen.text)}`,
      });
      expect(device.droppedUartBytes).toBe(crashLine.length);
      expect(seen.text).toBe('');
      // The crash sticks until reset; asking again does not drain again nor deliver anything.
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      expect(seen.text).toBe('');
    } finally {
      await device.close();
    }
  });

  it('is still draining when the late bytes come, and close ends it (the run is cancelled)', async () => {
    const device = await backend({ RENODE_STANDIN_QEMU: lateQemu(0.1) }, { drainQuietMs: 600_000, drainTimeoutMs: 600_000 }).open(board);
    const seen = capture(device);
    await device.flash(image('crash'));
    let settled = false;
    const pending = caught(device.run(600 * NANOS_PER_SECOND)).finally(() => (settled = true));
    await waitUntil(systemClock, () => (seen.text === crashLine ? true : undefined), {
      timeoutMs: 10_000,
      describe: 'the crash line',
      lastSeen: () => seen.text,
    });
    expect(settled).toBe(false);
    await device.close();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
  });

  it('is ended by reset (the run is cancelled), and the next boot captures its crash line again', async () => {
    const device = await backend({ RENODE_STANDIN_QEMU: lateQemu(0.1) }, { drainQuietMs: 1500, drainTimeoutMs: 1500 }).open(board);
    try {
      const seen = capture(device);
      await device.flash(image('crash'));
      const pid = pidOf(device);
      const pending = caught(device.run(600 * NANOS_PER_SECOND));
      await waitUntil(systemClock, () => (seen.text === crashLine ? true : undefined), { timeoutMs: 10_000, describe: 'the crash line', lastSeen: () => seen.text });
      await device.reset();
      expect(await pending).toMatchObject({ kind: 'cancelled', message: expect.stringContaining('reset') });
      seen.text = '';
      await expect(device.run(600 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      expect(seen.text).toBe(crashLine);
      expect(device.droppedUartBytes).toBe(0);
      expect(pidOf(device)).toBe(pid);
    } finally {
      await device.close();
    }
  });

  it('is ended by the run\'s signal as cancelled', async () => {
    const device = await backend({ RENODE_STANDIN_QEMU: lateQemu(0.1) }, { drainQuietMs: 600_000, drainTimeoutMs: 600_000 }).open(board);
    try {
      const controller = new AbortController();
      device.onUart((chunk) => {
        if (new TextDecoder().decode(chunk.bytes).endsWith('\r\n')) controller.abort(new Error('test cancels once the crash line is in'));
      });
      await device.flash(image('crash'));
      expect(await caught(device.run(600 * NANOS_PER_SECOND, { signal: controller.signal }))).toMatchObject({ kind: 'cancelled' });
    } finally {
      await device.close();
    }
  });
});
