import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { renodeStandinPath } from '../../test/fakes/renode-standin/standin-path.js';
import { backend, board, caught, image, pidOf } from '../../test/fakes/renode-standin/standin-renode-backend.js';
import { firmwareImage, makeElf } from '../../test/support/make-elf.js';
import { BackendError, type Device, NANOS_PER_SECOND } from '../backend.js';
import { processExists } from '../process/emulator-process.js';
import { freeTcpPort, RenodeBackend } from './renode-backend.js';

/**
 * Failure paths of the Renode backend, against the stand-in and its injected faults
 * (RENODE_STANDIN_FAULT). The normal paths are the contract suite (test/contract/renode.contract.test.ts);
 * the crash drain is renode-crash-drain.test.ts.
 */
const hello = image('hello');

/** Child processes of `pid` (the stand-in's qemu-system-arm). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n').map(Number).filter(Boolean);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

async function expectFlashError(device: Device, kind: string, message: RegExp): Promise<BackendError> {
  const error = await caught(device.flash(hello));
  expect(error).toBeInstanceOf(BackendError);
  expect(error).toMatchObject({ kind, message: expect.stringMatching(message) });
  return error as BackendError;
}

describe('RenodeBackend availability', () => {
  it('says how to install Renode when it cannot be found, and refuses to open', async () => {
    const missing = new RenodeBackend({ clock: systemClock, env: { PATH: '/nonexistent' } });
    const availability = await missing.availability(board);
    expect(availability).toEqual({ available: false, reason: expect.stringContaining('install Renode 1.16 (https://renode.io) or set HILBENCH_RENODE') });
    await expect(missing.open(board)).rejects.toMatchObject({ kind: 'unavailable' });
  });

  it('finds Renode at renodePath, off the search path', async () => {
    await expect(new RenodeBackend({ clock: systemClock, env: { PATH: '/nonexistent' }, renodePath: renodeStandinPath }).availability(board)).resolves.toEqual({ available: true });
  });

  it('reads no HILBENCH_RENODE itself: the CLI turns it into renodePath', async () => {
    await expect(new RenodeBackend({ clock: systemClock, env: { PATH: '/nonexistent', HILBENCH_RENODE: renodeStandinPath } }).availability(board)).resolves.toMatchObject({ available: false });
  });

  it('reports a board without a Renode platform as unavailable', async () => {
    const an385 = loadBoardCatalog().find((b) => b.id === 'mps2-an385')!;
    await expect(backend().availability(an385)).resolves.toMatchObject({ available: false, reason: expect.stringContaining('backends.renode') });
  });
});

describe('RenodeBackend failure modes (stand-in faults)', () => {
  it('maps an unknown platform file to unavailable with Renode\'s "Could not find file"', async () => {
    const unknown: Board = { ...board, backends: { renode: { platform: 'platforms/boards/no_such_board.repl', uart: 'sysbus.usart2' } } };
    const device = await backend().open(unknown);
    try {
      const error = await expectFlashError(device, 'unavailable', /Could not find file 'platforms\/boards\/no_such_board\.repl'/);
      expect(error.outputTail).toContain("There was an error executing command 'machine LoadPlatformDescription @platforms/boards/no_such_board.repl'");
    } finally {
      await device.close();
    }
  });

  it('maps a platform Renode cannot parse to unavailable', async () => {
    const device = await backend({ RENODE_STANDIN_FAULT: 'bad-repl' }).open(board);
    try {
      await expectFlashError(device, 'unavailable', /load the platform .*Error E00: Syntax error/);
    } finally {
      await device.close();
    }
  });

  it('maps a failed LoadELF to bad-image', async () => {
    const device = await backend({ RENODE_STANDIN_FAULT: 'bad-elf' }).open(board);
    try {
      await expectFlashError(device, 'bad-image', /load the firmware ELF.*Error while loading ELF: Could not load ELF from path/);
    } finally {
      await device.close();
    }
  });

  it('retries the UART terminal on another port, then fails naming the ports tried', async () => {
    const device = await backend({ RENODE_STANDIN_FAULT: 'port-in-use' }).open(board);
    try {
      await expectFlashError(device, 'flash-failed', /UART socket terminal \(3 ports tried\).*AddressAlreadyInUse/);
    } finally {
      await device.close();
    }
  });

  it('moves to a free port when the first one it picked is taken (a real EADDRINUSE)', async () => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen({ port: 0, host: '0.0.0.0' }, () => resolve()));
    const taken = (squatter.address() as net.AddressInfo).port;
    const picked: number[] = [];
    const pickPort = async () => {
      const port = picked.length === 0 ? taken : await freeTcpPort();
      picked.push(port);
      return port;
    };
    const device = await backend({}, { pickPort }).open(board);
    try {
      await device.flash(hello);
      expect(picked).toHaveLength(2);
      expect(picked[0]).toBe(taken);
    } finally {
      await device.close();
      squatter.close();
    }
  });

  it('reports Renode dying under a run as an infrastructure error with its status and tail', async () => {
    const device = await backend({ RENODE_STANDIN_FAULT: 'crash-on-start' }).open(board);
    try {
      await device.flash(hello);
      const error = await caught(device.run(NANOS_PER_SECOND));
      expect(error).toBeInstanceOf(BackendError);
      expect(error).toMatchObject({ kind: 'internal', message: expect.stringMatching(/Renode exited .*SIGABRT/) });
      expect((error as BackendError).isInfrastructure).toBe(true);
      expect((error as BackendError).outputTail).toContain('Unhandled exception');
    } finally {
      await device.close();
    }
  });

  it('gives up on a hung monitor within the bound and kills it even though it ignores SIGTERM', async () => {
    const device = await backend({ RENODE_STANDIN_FAULT: 'hang' }, { commandTimeoutMs: 1500, killGraceMs: 300 }).open(board);
    try {
      const error = await expectFlashError(device, 'flash-failed', /timed out after 1500 ms waiting for the Renode monitor prompt after `mach create "dut"`/);
      expect(error.outputTail).toContain('Renode, version 1.16.1');
    } finally {
      await device.close();
    }
  });

  it('reports a crash with the bracketed log timestamps of newer Renode builds too', async () => {
    const device = await backend({ RENODE_STANDIN_LOG_STYLE: 'bracketed' }).open(board);
    try {
      await device.flash(image('crash'));
      const stop = await device.run(5 * NANOS_PER_SECOND);
      expect(stop).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/^cpu: CPU abort \[PC=0x[0-9A-F]+\]: Lockup/) });
    } finally {
      await device.close();
    }
  });
});

describe('RenodeBackend reset', () => {
  it('runs the firmware again after a crash, through the monitor, in the same Renode process', async () => {
    const device = await backend().open(board);
    try {
      let text = '';
      device.onUart((chunk) => (text += new TextDecoder().decode(chunk.bytes)));
      await device.flash(image('crash'));
      const pid = pidOf(device);
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      const firstBoot = text;
      text = '';
      await device.reset();
      await expect(device.run(5 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
      expect(text).toBe(firstBoot);
      expect(pidOf(device)).toBe(pid);
    } finally {
      await device.close();
    }
  });
});

describe('RenodeBackend reset during a run', () => {
  it('ends the pending run as cancelled and keeps the Renode process for the next boot', async () => {
    const device = await backend().open(board);
    try {
      let text = '';
      device.onUart((chunk) => (text += new TextDecoder().decode(chunk.bytes)));
      await device.flash(hello);
      const pid = pidOf(device);
      const pending = caught(device.run(600 * NANOS_PER_SECOND));
      await waitUntil(systemClock, () => (text.includes('tick 1') ? true : undefined), { timeoutMs: 10_000, describe: 'the first tick', lastSeen: () => text });
      await device.reset();
      expect(await pending).toMatchObject({ kind: 'cancelled', message: expect.stringContaining('reset') });
      text = '';
      await expect(device.run(10 * NANOS_PER_SECOND, { until: () => text.includes('tick 1') })).resolves.toMatchObject({ reason: 'until' });
      expect(text).toMatch(/^hilbench hello board=stm32f4-discovery\r\n/);
      expect(pidOf(device)).toBe(pid);
    } finally {
      await device.close();
    }
  });
});

describe('RenodeBackend process hygiene', () => {
  it('leaves no Renode (nor the stand-in\'s emulator) after a cancelled run', async () => {
    const device = await backend().open(board);
    try {
      await device.flash(hello);
      const pid = pidOf(device);
      const controller = new AbortController();
      device.onUart(() => controller.abort(new Error('test cancels on the first byte')));
      const error = await caught(device.run(600 * NANOS_PER_SECOND, { signal: controller.signal }));
      expect(error).toMatchObject({ kind: 'cancelled' });
      expect(processExists(pid)).toBe(false);
    } finally {
      await device.close();
    }
  });

  it('quits Renode on close while the firmware runs, and settles a pending run', async () => {
    const device = await backend().open(board);
    await device.flash(hello);
    const pid = pidOf(device);
    await device.run(0.2 * NANOS_PER_SECOND);
    const emulators = childrenOf(pid);
    expect(emulators.length).toBeGreaterThan(0);
    const pending = caught(device.run(600 * NANOS_PER_SECOND));
    await device.close();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    expect(processExists(pid)).toBe(false);
    for (const child of emulators) expect(processExists(child)).toBe(false);
  });

  it('cancels a flash in progress and leaves nothing behind', async () => {
    const device = await backend().open(board);
    try {
      const controller = new AbortController();
      const flashing = caught(device.flash(hello, { signal: controller.signal }));
      controller.abort(new Error('test cancels the flash'));
      expect(await flashing).toMatchObject({ kind: 'cancelled' });
      expect((device as unknown as { pid: number | undefined }).pid).toBeUndefined();
    } finally {
      await device.close();
    }
  });
});

// A 28-byte STM32 USART2 echo, assembled once with arm-none-eabi-as (-mcpu=cortex-m4):
//   ldr r0, =0x40004400; movw r1, #0x200c; str r1, [r0, #12]   @ CR1: UE, TE, RE
//   movs r1, #0x3e; str r1, [r0, #4]                            @ DR: '>', the receiver is on
//   loop: ldr r1, [r0]; lsls r1, r1, #26; bpl loop              @ SR bit 5: RXNE
//   ldr r1, [r0, #4]; str r1, [r0, #4]; b loop                  @ DR: echo the byte
//   .word 0x40004400                                             @ literal pool
const echoCode = [0x05, 0x48, 0x42, 0xf2, 0x0c, 0x01, 0xc1, 0x60, 0x3e, 0x21, 0x41, 0x60, 0x01, 0x68, 0x89, 0x06, 0xfc, 0xd5, 0x41, 0x68, 0x41, 0x60, 0xf9, 0xe7, 0x00, 0x44, 0x00, 0x40];
const echoBytes = new Uint8Array(8 + echoCode.length);
new DataView(echoBytes.buffer).setUint32(0, 0x20001000, true);
new DataView(echoBytes.buffer).setUint32(4, 0x08000009, true);
echoBytes.set(echoCode, 8);
const echo = firmwareImage(makeElf({ segments: [{ paddr: 0x08000000, data: echoBytes }], entry: 0x08000009 }));

describe('RenodeBackend UART input', () => {
  // Written once the firmware says its receiver is on: an STM32 USART drops what arrives before RE
  // is set (so does QEMU's model behind the stand-in), unlike the CMSDK UART of the QEMU test. A
  // fixed wait is not enough: Renode runs on wall time, and on a loaded machine 0.2 s could pass
  // before the emulator ran the firmware's first instructions (a CI run lost the ping that way).
  it('delivers writeUart bytes to the running firmware', async () => {
    const device = await backend().open(board);
    try {
      let received = '';
      device.onUart((chunk) => (received += new TextDecoder().decode(chunk.bytes)));
      await device.flash(echo);
      expect((await device.run(20 * NANOS_PER_SECOND, { until: () => received.includes('>') })).reason).toBe('until');
      await device.writeUart(new TextEncoder().encode('ping'));
      expect((await device.run(20 * NANOS_PER_SECOND, { until: () => received.includes('ping') })).reason).toBe('until');
      await device.writeUart(new TextEncoder().encode('pong'));
      expect((await device.run(20 * NANOS_PER_SECOND, { until: () => received.includes('pong') })).reason).toBe('until');
      expect(received).toBe('>pingpong');
    } finally {
      await device.close();
    }
  });

  // The example firmware does not read its UART, so this checks the socket path only: the write
  // completes while the terminal is connected and is refused once the device is closed.
  it('writes to the UART terminal socket while open and refuses after close', async () => {
    const device = await backend().open(board);
    try {
      await device.flash(hello);
      await device.run(0.1 * NANOS_PER_SECOND);
      await expect(device.writeUart(new TextEncoder().encode('ping\r'))).resolves.toBeUndefined();
    } finally {
      await device.close();
    }
    await expect(device.writeUart(new Uint8Array([1]))).rejects.toBeInstanceOf(BackendError);
  });
});
