/**
 * Results as they happen (issue 11): how long until the firmware's first UART byte reaches a
 * client of the live stream (`GET /api/v1/jobs/{id}/uart`, Server-Sent Events), per backend,
 * from the moment the flash job is submitted, against the same first byte reaching a direct
 * `qemu-system-arm -serial stdio` from the moment it is spawned. Both include starting the
 * emulator and loading the image; the difference is what the bench adds (upload, ELF checks,
 * queue, worker claim, UART relay to the stream).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadBoardCatalog } from '../boards/catalog.js';
import { qemuDirectCommand } from '../backends/qemu/qemu-command.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { systemClock } from '../core/clock.js';
import type { BenchClient } from '../clients/bench/bench-client.js';
import { startLocalBench } from './local-bench-server.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const firmware = (board: string) => new URL(`../firmware/examples/${board}/hello.elf`, import.meta.url).pathname;

/** Spawn to first stdout byte of a direct QEMU run, killed at once after. */
function directFirstByteMs(board: string): Promise<number> {
  const b = loadBoardCatalog().find((x) => x.id === board)!;
  const command = qemuDirectCommand(b, firmware(board));
  return new Promise((resolve, reject) => {
    const start = nowMs();
    const child = spawn(command.file, command.args, { stdio: ['ignore', 'pipe', 'ignore'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no output from the direct ${board} run within 30 s`));
    }, 30_000);
    child.stdout.once('data', () => {
      clearTimeout(timer);
      resolve(nowMs() - start);
      child.kill('SIGKILL');
    });
    child.once('error', reject);
  });
}

/** Submit to first SSE UART event through a bench service running `board` on `backend`. */
async function streamedFirstByteMs(client: BenchClient, board: string): Promise<number> {
  const elf = new Uint8Array(readFileSync(firmware(board)));
  const start = nowMs();
  const job = await client.submitFlash(board, elf, { uartSeconds: 2 });
  for await (const event of client.uart(job.job_id)) {
    if (event.kind === 'uart') {
      const ms = nowMs() - start;
      await client.waitForJob(job.job_id);
      return ms;
    }
    if (event.kind === 'end') throw new Error(`job on ${board} ended without UART: ${JSON.stringify(event.job.failure)}`);
  }
  throw new Error('the stream ended');
}

export async function runLiveUartBench(options: { repeats?: number } = {}): Promise<BenchRow[]> {
  const repeats = options.repeats ?? 5;
  const boards = loadBoardCatalog();
  const bench = await startLocalBench('live');
  const { client } = bench;
  const rows: BenchRow[] = [];
  try {
    for (const [backend, board] of [['sim', 'pico'], ['sim', 'uno']] as const) {
      const samples: number[] = [];
      for (let i = 0; i < repeats; i++) samples.push(await streamedFirstByteMs(client, board));
      rows.push({ name: `${backend} ${board}: submit to first UART byte at an SSE client, median`, value: percentile(samples, 50), unit: 'ms', note: `${repeats} jobs` });
    }
    const qemuBoard = 'netduinoplus2';
    const qemu = new QemuBackend({ clock: systemClock });
    const available = await qemu.availability(boards.find((b) => b.id === qemuBoard)!);
    if (!available.available) {
      rows.push({ name: `qemu ${qemuBoard}: skipped`, value: Number.NaN, unit: '', note: available.reason });
      return rows;
    }
    const streamed: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < repeats; i++) {
      streamed.push(await streamedFirstByteMs(client, qemuBoard));
      direct.push(await directFirstByteMs(qemuBoard));
    }
    const s = percentile(streamed, 50);
    const d = percentile(direct, 50);
    rows.push(
      { name: `qemu ${qemuBoard}: submit to first UART byte at an SSE client, median`, value: s, unit: 'ms', note: `${repeats} jobs, alternating with the direct runs` },
      { name: `qemu ${qemuBoard}: spawn to first byte of a direct qemu-system-arm -serial stdio, median`, value: d, unit: 'ms', note: 'same ELF and machine options' },
      { name: `qemu ${qemuBoard}: streamed / direct`, value: s / d, unit: 'x', note: 'what the bench adds to the first byte' },
    );
    return rows;
  } finally {
    await bench.close();
  }
}
