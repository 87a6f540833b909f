import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFirmwareImage } from '../../backends/image-check.js';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { runDebugSession } from '../../harness/debug/debug-session.js';
import { GdbBridge } from '../../harness/debug/gdb-bridge.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { debugElf, gdbBatch } from '../support/gdb-batch.js';

/**
 * `Device.debug` on the probe backend (issue 32) against the stand-in bench: the stand-in
 * OpenOCD (`gdb_port`, the gdb-detach handler) and probe-rs (`gdb --reset-halt`) serve GDB's
 * remote protocol on a loopback port as the real tools do (test/fakes/openocd/fake-gdb-server.ts),
 * the serial port is a socat pty pair. Real gdb-multiarch attaches through hilbench's bridge,
 * finds the core halted at the image's reset vector, reads flash, and detaches; the tool then
 * resumes the core and the fake firmware prints. The stand-ins execute no code, so breaking at
 * main and stepping are covered on the emulators (debug-gdb.test.ts), not here.
 */
const catalog = loadBoardCatalog();
const fake = new FakeBench();
let bench: BenchFile;
beforeAll(async () => {
  bench = await fake.start([
    { boardId: 'stm32f4-discovery', kind: 'openocd' },
    { boardId: 'pico', kind: 'probe-rs' },
  ]);
});
afterAll(() => fake.stop());

const newBackend = () => new ProbeBackend({ bench, clock: systemClock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv });

describe('hilbench debug on the probe backend (stand-in OpenOCD and probe-rs)', () => {
  it.each([
    ['stm32f4-discovery', 'openocd', '0x08000004', /0x8000004 <vector_table\+4>:\s+0x08000041/],
    ['pico', 'probe-rs', '0x10000004', /0x10000004 <vector_table\+4>:\s+0x10000041/],
  ] as const)('%s through %s: real GDB finds the core halted at reset, reads flash and detaches; the core then runs on', { timeout: 120_000 }, async (boardId, tool, resetVector, vectorWord) => {
    const board = catalog.find((b) => b.id === boardId)!;
    const image = loadFirmwareImage(readFileSync(debugElf(boardId)));
    const device = await newBackend().open(board);
    let uart = '';
    device.onUart((chunk) => (uart += Buffer.from(chunk.bytes).toString('latin1')));
    try {
      await device.flash(image);
      const firstStream = await device.debug!.attach();
      const bridge = await GdbBridge.start({ debug: device.debug!, firstStream, boardId, clock: systemClock, port: 0, idleTimeoutMs: 120_000, log: () => undefined });
      const gdb = await gdbBatch(boardId, bridge.port, ['info symbol $pc', `x/xw ${resetVector}`, 'detach']);
      expect(await bridge.ended).toEqual({ reason: 'detached', message: 'the debugger detached; the firmware runs on' });
      expect(gdb.output).toMatch(/^reset_handler in section \.text/m);
      expect(gdb.output).toMatch(vectorWord);
      expect(gdb.output).toMatch(/\[Inferior 1 \(.*\) detached\]/);
      // Nothing was printed while GDB held the core; the detach let it run without a new reset release.
      expect(uart).toBe('');
      const bootLine = fakeBootLine(image.sha256);
      const stop = await device.run(60_000_000_000, { until: () => uart.includes(bootLine) });
      expect(stop.reason).toBe('until');
      const invocations = fake.invocations(boardId).filter((line) => !line.startsWith('hang'));
      expect(invocations.at(-1)).toMatch(tool === 'openocd' ? /gdb_port \d+.*reset halt/ : /^probe-rs gdb .*--gdb-connection-string 127\.0\.0\.1:\d+ --reset-halt/);
      expect(invocations.some((line) => /reset run|^probe-rs reset/.test(line))).toBe(false);
    } finally {
      await device.close();
    }
  });

  it('a second debugger after the first gets a fresh server with the core reset and halted', { timeout: 120_000 }, async () => {
    const board = catalog.find((b) => b.id === 'stm32f4-discovery')!;
    const device = await newBackend().open(board);
    try {
      await device.flash(loadFirmwareImage(readFileSync(debugElf('stm32f4-discovery'))));
      const before = fake.invocations('stm32f4-discovery').length;
      for (let i = 0; i < 2; i++) {
        const stream = await device.debug!.attach();
        let received = '';
        stream.onData((text) => (received += text));
        const answered = new Promise<void>((resolve) => stream.onData(() => /\$T05#/.test(received) && resolve()));
        stream.write(rspPacket('?'));
        await answered;
        await stream.close();
      }
      expect(fake.invocations('stm32f4-discovery').slice(before).filter((line) => line.includes('gdb_port'))).toHaveLength(2);
    } finally {
      await device.close();
    }
  });

  it('a GDB server that never listens is stopped at resetMs and the attach fails as timeout, quoting the tool', { timeout: 120_000 }, async () => {
    const board = catalog.find((b) => b.id === 'pico')!;
    const attachment = bench.boards.pico!;
    const quick = new ProbeBackend({
      bench: { ...bench, boards: { pico: { ...attachment, timeouts: { ...attachment.timeouts, resetMs: 1_500, killGraceMs: 300 } } } },
      clock: systemClock,
      probeRsPath: fakeProbeRsPath,
      toolEnv: fake.toolEnv,
    });
    const device = await quick.open(board);
    try {
      await device.flash(loadFirmwareImage(readFileSync(debugElf('pico'))));
      fake.setBehaviour('pico', 'hang');
      const error = await device.debug!.attach().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ kind: 'timeout', message: expect.stringMatching(/timed out after 1500 ms waiting for .*probe-rs gdb .*127\.0\.0\.1:\d+/) });
      // The stand-in logs its pid once it runs (on a loaded machine it may not have got that far): then it must be gone.
      const hung = /hang pid=(\d+)/.exec(fake.invocations('pico').join('\n'));
      if (hung) expect(() => process.kill(Number(hung[1]), 0)).toThrow();
    } finally {
      fake.setBehaviour('pico', 'ok');
      await device.close();
    }
  });

  it('hilbench debug with the probe unplugged fails before anyone can connect: probe-not-found with the tool\'s words', { timeout: 120_000 }, async () => {
    const board = catalog.find((b) => b.id === 'stm32f4-discovery')!;
    const image = loadFirmwareImage(readFileSync(debugElf('stm32f4-discovery')));
    // Flash works; then the probe goes, as a cable pulled between two jobs.
    const device = await newBackend().open(board);
    await device.flash(image);
    fake.unplugProbe('stm32f4-discovery');
    try {
      await expect(device.debug!.attach()).rejects.toMatchObject({ kind: 'probe-not-found', message: expect.stringMatching(/GDB server on stm32f4-discovery .*gdb_port.*Error: open failed/s) });
    } finally {
      await device.close();
    }
    let listened = false;
    const outcome = await runDebugSession(newBackend(), board, image, {
      clock: systemClock,
      gdbPort: 0,
      idleTimeoutMs: 60_000,
      afterDetachSeconds: 1,
      onUart: () => undefined,
      log: () => undefined,
      onListening: () => (listened = true),
    });
    fake.plugProbe('stm32f4-discovery');
    expect(listened).toBe(false);
    expect(outcome).toEqual({ outcome: 'failed', kind: 'probe-not-found', reason: expect.stringMatching(/^probe-not-found: /) });
  });
});
