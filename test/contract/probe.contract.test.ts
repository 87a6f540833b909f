import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { Backend, Device } from '../../backends/backend.js';
import { type BenchFile, loadBenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { EM_ARM, EM_AVR } from '../../core/elf.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

/**
 * The backend contract on the probe backend. With `HILBENCH_BENCH_FILE` set it runs on the real
 * boards that file attaches (each needs a `healthCheck` firmware: it is the contract's hello);
 * `HILBENCH_UART_LOG_DIR` then receives one UART log per board. Otherwise it runs on the
 * stand-in bench: fake openocd / probe-rs and a fake board behind a socat pty pair.
 */
const catalog = loadBoardCatalog();
const boardById = (id: string) => {
  const board = catalog.find((b) => b.id === id);
  if (!board) throw new Error(`no board ${id} in the catalog`);
  return board;
};
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const benchFilePath = process.env.HILBENCH_BENCH_FILE;

if (benchFilePath) {
  const bench = loadBenchFile(benchFilePath);
  const logDir = process.env.HILBENCH_UART_LOG_DIR;
  for (const [boardId, attachment] of Object.entries(bench.boards)) {
    const check = attachment.healthCheck;
    if (!check) throw new Error(`${bench.source}: boards.${boardId} needs a healthCheck firmware to run the contract on it`);
    const board = boardById(boardId);
    const hello = firmwareImage(new Uint8Array(readFileSync(check.elf)));
    describeBackendContract(`probe (real board, ${path.basename(bench.source)})`, {
      backend: () => withUartLog(new ProbeBackend({ bench, clock: systemClock }), logDir),
      board,
      hello,
      helloPattern: new RegExp(check.expect),
      helloWithinSeconds: check.withinSeconds,
      wrongArchitecture: firmwareImage(makeElf({ machine: board.mcu.architecture === 'avr' ? EM_ARM : EM_AVR })),
    });
  }
} else {
  const fake = new FakeBench();
  let bench: BenchFile | undefined;
  beforeAll(async () => {
    bench = await fake.start([
      { boardId: 'stm32f4-discovery', kind: 'openocd' },
      { boardId: 'pico', kind: 'probe-rs' },
    ]);
  });
  afterAll(() => fake.stop());
  const backend = () =>
    new ProbeBackend({ bench: bench!, clock: systemClock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv });

  for (const [boardId, flashStart] of [
    ['stm32f4-discovery', 0x0800_0000],
    ['pico', 0x1000_0000],
  ] as const) {
    const hello = firmwareImage(makeElf({ segments: [{ paddr: flashStart, data: new Uint8Array(256).fill(0xa5) }] }));
    describeBackendContract(`probe with stand-in tools (${boardId === 'pico' ? 'probe-rs' : 'openocd'})`, {
      backend,
      board: boardById(boardId),
      hello,
      helloPattern: new RegExp(`^${escapeRegExp(fakeBootLine(hello.sha256))}`),
      // The release command starts through tsx (0.3-1 s here) before the fake firmware prints.
      helloWithinSeconds: 3,
      wrongArchitecture: firmwareImage(makeElf({ machine: EM_AVR })),
    });
  }
}

/** Tees every UART chunk of every device to `<dir>/<board>.uart.log` (CI artifacts). */
function withUartLog(backend: Backend, dir: string | undefined): Backend {
  if (!dir) return backend;
  mkdirSync(dir, { recursive: true });
  return {
    name: backend.name,
    availability: (board) => backend.availability(board),
    open: async (board, options): Promise<Device> => {
      const device = await backend.open(board, options);
      const file = path.join(dir, `${board.id}.uart.log`);
      appendFileSync(file, `\n--- ${new Date().toISOString()} device opened ---\n`);
      device.onUart((chunk) => appendFileSync(file, chunk.bytes));
      return device;
    },
  };
}
