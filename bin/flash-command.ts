import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { backendNames } from '../boards/backend-names.js';
import { defaultBoardsDir } from '../boards/boards-dir.js';

interface FlashOptions {
  board: string;
  server?: string;
  token?: string;
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

/**
 * `hilbench flash <firmware.elf> --board <id>`: one firmware image, its serial output live on
 * stdout, a verdict from `--expect-text`/`--expect-regex`/`--fail-text`, and Wokwi's exit codes
 * (0 passed, 1 failed, 42 timeout). Against a bench server (`--server`, `--token`) through the
 * live UART stream, or in this process on a backend (`--backend`). docs/cli.md.
 */
export function addFlashCommand(program: Command): void {
  program
    .command('flash')
    .description('Flash one firmware image and watch its serial output live; exit 0 passed, 1 failed, 42 timeout (docs/cli.md).')
    .argument('<firmware>', 'the ELF file')
    .requiredOption('--board <id>', 'the board to run it on')
    .addOption(new Option('--server <url>', 'a bench server to run it on (else: in this process)').env('HILBENCH_URL'))
    .addOption(new Option('--token <token>', 'the agent token for --server').env('HILBENCH_TOKEN'))
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
    .action(async (firmware: string, opts: FlashOptions) => {
      const { SerialWatch, FLASH_EXIT, flashJunit } = await import('../harness/cli/serial-verdict.js');
      let expectRegex: RegExp | undefined;
      try {
        expectRegex = opts.expectRegex === undefined ? undefined : new RegExp(opts.expectRegex, 's');
      } catch (err) {
        throw new Error(`--expect-regex is not a valid regular expression: ${(err as Error).message}`);
      }
      const watch = new SerialWatch({ expectText: opts.expectText, expectRegex, failText: opts.failText });
      const bytes = readFileSync(firmware);
      let serial = '';
      const print = (text: string) => {
        serial += text;
        process.stdout.write(text);
        return watch.feed(text);
      };
      const started = performance.now();
      const result = opts.server ? await onServer(opts, bytes, print) : await inProcess(opts, bytes, print);
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
      process.stderr.write(`\nhilbench flash: ${final.outcome}: ${final.reason}\n`);
      process.exitCode = FLASH_EXIT[final.outcome];
    });
}

/** Runs the image in this process; `print` returns a verdict once one is reached (the run stops then). */
async function inProcess(opts: FlashOptions, bytes: Uint8Array, print: (text: string) => unknown): Promise<{ failed?: string }> {
  const { systemClock } = await import('../core/clock.js');
  const { loadBoardCatalog } = await import('../boards/catalog.js');
  const { createBackends } = await import('../harness/backend-registry.js');
  const { resolveBoardBackend } = await import('../harness/board-resolution.js');
  const { loadFirmwareImage, checkImageForBoard } = await import('../backends/image-check.js');
  const { runFirmware } = await import('../harness/run-firmware.js');
  const { BackendError } = await import('../backends/backend.js');
  const board = loadBoardCatalog(opts.boardsDir).find((b) => b.id === opts.board);
  if (!board) throw new Error(`board "${opts.board}" is not in the catalog (hilbench boards lists them)`);
  const resolved = await resolveBoardBackend(board, createBackends({ clock: systemClock, boards: [board], qemuBinary: opts.qemu }), opts.backend as never);
  if (!resolved.backend) throw new Error(`board ${board.id} cannot run here: ${resolved.offlineReason ?? 'no backend'}`);
  const image = loadFirmwareImage(bytes);
  checkImageForBoard(image, board);
  const decided = new AbortController();
  const decoder = new TextDecoder();
  try {
    const run = await runFirmware(resolved.backend, board, image, {
      clock: systemClock,
      uartSeconds: opts.timeout,
      maxUartBytes: 16 * 1024 * 1024,
      signal: decided.signal,
      onUart: (chunk) => {
        if (print(decoder.decode(chunk.bytes, { stream: true }))) decided.abort();
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

/** Runs the image on a bench server, watching its live UART stream (docs/bench-api.md, "Live results"). */
async function onServer(opts: FlashOptions, bytes: Uint8Array, print: (text: string) => unknown): Promise<{ failed?: string }> {
  if (!opts.token) throw new Error('--server needs --token (an agent token: POST /api/v1/agents/register)');
  const base = opts.server!.replace(/\/+$/, '');
  const auth = { authorization: `Bearer ${opts.token}` };
  const form = new FormData();
  form.set('board', opts.board);
  form.set('uart_seconds', String(opts.timeout));
  form.set('firmware', new Blob([bytes], { type: 'application/octet-stream' }), 'firmware.elf');
  const submitted = await fetch(`${base}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body: form });
  const job = (await submitted.json()) as { job_id?: string; detail?: unknown };
  if (!submitted.ok || !job.job_id) throw new Error(`the server refused the job (${submitted.status}): ${JSON.stringify(job.detail)}`);
  const stream = await fetch(`${base}/api/v1/jobs/${job.job_id}/uart`, { headers: { ...auth, accept: 'text/event-stream' } });
  if (!stream.ok || !stream.body) throw new Error(`the server did not stream the job's UART (${stream.status})`);
  const reader = stream.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { failed: 'the UART stream closed before the job ended' };
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === 'uart' && data) {
        if (print((JSON.parse(data) as { text: string }).text)) {
          await reader.cancel().catch(() => undefined);
          return {};
        }
      } else if (event === 'end' && data) {
        const ended = JSON.parse(data) as { state: string; failure: { kind: string; message: string } | null; stop: { reason: string; exit_code?: number; message?: string } | null };
        if (ended.state === 'failed') return { failed: `${ended.failure?.kind}: ${ended.failure?.message}` };
        if (ended.stop?.reason === 'crashed') return { failed: `the firmware crashed: ${ended.stop.message ?? ''}` };
        if (ended.stop?.reason === 'exited' && ended.stop.exit_code !== 0) return { failed: `the firmware exited with code ${ended.stop.exit_code}` };
        return {};
      }
    }
  }
}
