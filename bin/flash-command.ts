import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { backendNames } from '../boards/backend-names.js';
import { defaultBoardsDir } from '../boards/boards-dir.js';

interface FlashOptions {
  board: string;
  server?: string;
  token?: string;
  wait: number;
  backend: string;
  boardsDir: string;
  timeout: number;
  expectText?: string;
  expectRegex?: string;
  failText?: string;
  serialLogFile?: string;
  junit?: string;
  qemu?: string;
}

/** How one flash run ended: what the exit code and the JUnit case say. */
type Outcome = { outcome: 'passed' | 'failed' | 'timeout'; reason: string };

/** Seconds `--server` waits for a busy board by default: a CI step queues behind the one before it. */
const DEFAULT_WAIT_SECONDS = 300;

/**
 * `hilbench flash <firmware.elf> --board <id>`: one firmware image, its serial output live on
 * stdout, a verdict from `--expect-text`/`--expect-regex`/`--fail-text`, and Wokwi's exit codes
 * (0 passed, 1 failed, 42 timeout) plus 2 when it never ran (refused, unreachable, bad arguments,
 * no such board). Against a bench server (`--server`, `--token`, waiting `--wait` for a busy
 * board) through the live UART stream, or in this process on a backend (`--backend`). docs/cli.md.
 */
export function addFlashCommand(program: Command): void {
  program
    .command('flash')
    .description('Flash one firmware image and watch its serial output live; exit 0 passed, 1 failed, 42 timeout, 2 never ran (docs/cli.md).')
    .argument('<firmware>', 'the ELF file')
    .requiredOption('--board <id>', 'the board to run it on')
    .addOption(new Option('--server <url>', 'a bench server to run it on (else: in this process)').env('HILBENCH_URL'))
    .addOption(new Option('--token <token>', 'the agent token for --server').env('HILBENCH_TOKEN'))
    .addOption(
      new Option('--wait <seconds>', 'with --server: how long to wait for a busy board in its queue (0: fail at once)')
        .default(DEFAULT_WAIT_SECONDS)
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`expected a number of seconds 0 or more, got "${v}"`);
          return n;
        }),
    )
    .addOption(new Option('--backend <name>', 'in process: the backend').default('auto').choices(['auto', ...backendNames]))
    .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
    .addOption(new Option('--qemu <path>', 'qemu-system-arm executable').env('HILBENCH_QEMU'))
    .addOption(
      new Option('--timeout <seconds>', "how long to capture, in seconds of the device's time (simulated time on sim, host time on QEMU, probe)")
        .default(10)
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`expected a positive number of seconds, got "${v}"`);
          return n;
        }),
    )
    .option('--expect-text <text>', 'pass as soon as the output contains this')
    .option('--expect-regex <pattern>', 'pass as soon as the output matches this (JavaScript regular expression)')
    .option('--fail-text <text>', 'fail as soon as the output contains this')
    .option('--serial-log-file <file>', 'write the whole serial output here')
    .option('--junit <file>', 'write a JUnit report with one test case')
    // Bad arguments never ran anything: exit 2, as every other run that never started (docs/cli.md).
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : FLASH_NEVER_RAN_EXIT))
    .action(async (firmware: string, opts: FlashOptions) => {
      const { NeverRan } = await import('./flash-on-server.js');
      try {
        await flashAction(firmware, opts);
      } catch (err) {
        if (!(err instanceof NeverRan)) throw err;
        process.stderr.write(`hilbench flash: never ran: ${err.message}\n`);
        process.exitCode = FLASH_NEVER_RAN_EXIT;
      }
    });
}

/** The exit code of a run that never started (FLASH_EXIT.neverRan; kept here so `--help` loads nothing more). */
const FLASH_NEVER_RAN_EXIT = 2;

async function flashAction(firmware: string, opts: FlashOptions): Promise<void> {
  const { SerialWatch, FLASH_EXIT, flashJunit } = await import('../harness/cli/serial-verdict.js');
  const { NeverRan, flashOnServer } = await import('./flash-on-server.js');
  let expectRegex: RegExp | undefined;
  try {
    expectRegex = opts.expectRegex === undefined ? undefined : new RegExp(opts.expectRegex, 's');
  } catch (err) {
    throw new NeverRan(`--expect-regex is not a valid regular expression: ${(err as Error).message}`);
  }
  const watch = new SerialWatch({ expectText: opts.expectText, expectRegex, failText: opts.failText });
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(firmware);
  } catch (err) {
    throw new NeverRan(`reading the firmware ${firmware} failed: ${(err as Error).message}`);
  }
  let serial = '';
  const print = (text: string) => {
    serial += text;
    process.stdout.write(text);
    return watch.feed(text)?.reason;
  };
  const started = performance.now();
  const note = (line: string) => void process.stderr.write(`${line}\n`);
  const result = opts.server
    ? await flashOnServer({ server: opts.server, token: opts.token, board: opts.board, uartSeconds: opts.timeout, waitSeconds: opts.wait, bytes, print, note })
    : await inProcess(opts, bytes, print);
  // The next shell prompt starts on a line of its own, whatever the firmware printed last.
  if (serial !== '' && !serial.endsWith('\n')) process.stdout.write('\n');
  const final: Outcome = watch.verdict
    ? { outcome: watch.verdict.outcome, reason: watch.verdict.reason }
    : result.failed
      ? { outcome: 'failed', reason: result.failed }
      : watch.expectsSomething
        ? { outcome: 'timeout', reason: `the expected output did not appear within ${opts.timeout} s of device time` }
        : { outcome: 'passed', reason: 'the firmware ran for its capture window' };
  if (opts.serialLogFile) writeFileSync(opts.serialLogFile, serial);
  if (opts.junit) {
    writeFileSync(opts.junit, flashJunit({ name: `${opts.board} ${path.basename(firmware)}`, seconds: (performance.now() - started) / 1000, ...final, serial }));
  }
  process.stderr.write(`hilbench flash: ${final.outcome}: ${final.reason}\n`);
  process.exitCode = FLASH_EXIT[final.outcome];
}

/** Runs the image in this process; `print` returns a verdict once one is reached (the run stops then). */
async function inProcess(opts: FlashOptions, bytes: Uint8Array, print: (text: string) => string | undefined): Promise<{ failed?: string }> {
  const { systemClock } = await import('../core/clock.js');
  const { loadBoardCatalog } = await import('../boards/catalog.js');
  const { createBackends } = await import('../harness/backend-registry.js');
  const { resolveBoardBackend } = await import('../harness/board-resolution.js');
  const { loadFirmwareImage, checkImageForBoard } = await import('../backends/image-check.js');
  const { runFirmware } = await import('../harness/run-firmware.js');
  const { BackendError } = await import('../backends/backend.js');
  const { NeverRan } = await import('./flash-on-server.js');
  const board = loadBoardCatalog(opts.boardsDir).find((b) => b.id === opts.board);
  if (!board) throw new NeverRan(`board "${opts.board}" is not in the catalog (hilbench boards lists them)`);
  const resolved = await resolveBoardBackend(board, createBackends({ clock: systemClock, boards: [board], qemuBinary: opts.qemu }), opts.backend as never);
  if (!resolved.backend) throw new NeverRan(`board ${board.id} cannot run here: ${resolved.offlineReason ?? 'no backend'}`);
  let image;
  try {
    image = loadFirmwareImage(bytes);
    checkImageForBoard(image, board);
  } catch (err) {
    throw new NeverRan(`the firmware cannot run on ${board.id}: ${(err as Error).message}`);
  }
  const decided = new AbortController();
  const decoder = new TextDecoder();
  try {
    const run = await runFirmware(resolved.backend, board, image, {
      clock: systemClock,
      uartSeconds: opts.timeout,
      maxUartBytes: 16 * 1024 * 1024,
      signal: decided.signal,
      onUart: (chunk) => {
        if (print(decoder.decode(chunk.bytes, { stream: true })) !== undefined) decided.abort();
      },
    });
    if (run.stop.reason === 'crashed') return { failed: `the firmware crashed: ${run.stop.message}` };
    if (run.stop.reason === 'exited' && run.stop.exitCode !== 0) return { failed: `the firmware exited with code ${run.stop.exitCode}` };
    return {};
  } catch (err) {
    if (decided.signal.aborted) return {};
    if (err instanceof BackendError) return { failed: `${err.kind}: ${err.message}` };
    throw err;
  }
}
