import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { backendNames } from '../boards/backend-names.js';
import { defaultBoardsDir } from '../boards/boards-dir.js';
import { port, positiveNumber } from './cli-options.js';

interface DebugOptions {
  board: string;
  backend: string;
  boardsDir: string;
  qemu?: string;
  renode?: string;
  rp2040Bootrom?: string;
  benchFile?: string;
  gdbPort: number;
  server?: string;
  token?: string;
  idleTimeoutSeconds: number;
  afterDetachSeconds: number;
}

/**
 * Exit status of `hilbench debug`: `hilbench flash`'s (0 passed, 1 failed, 42 timeout, 2 never ran:
 * no such board, none that can run it here, an unreadable or unfit ELF, a GDB port in use), and 130
 * for Ctrl-C as any interrupted command.
 */
const DEBUG_EXIT = { passed: 0, failed: 1, timeout: 42, neverRan: 2, interrupted: 130 } as const;

/**
 * `hilbench debug <firmware.elf> --board <id>`: flashes the image with the core halted at reset,
 * serves GDB's remote protocol on 127.0.0.1 (`--gdb-port`, default 3333), streams the UART to
 * stdout, and ends when GDB detaches or kills the target, on Ctrl-C, or when no debugger is
 * connected for `--idle-timeout-seconds`; the board is freed every way. docs/debug.md.
 */
export function addDebugCommand(program: Command): void {
  program
    .command('debug')
    .description('Debug one firmware image with GDB: flashed halted at reset, GDB remote protocol on 127.0.0.1 (docs/debug.md); exit 0 detached, 1 failed, 42 idle timeout.')
    .argument('<firmware>', 'the ELF file (with debug information, for source-level debugging)')
    .requiredOption('--board <id>', 'the board to debug it on')
    .addOption(new Option('--gdb-port <port>', 'TCP port on 127.0.0.1 for GDB (0: any free port)').default(3333).argParser(port))
    .addOption(new Option('--server <url>', 'a bench server whose board (on any of its workers) to debug (else: in this process)').env('HILBENCH_URL'))
    .addOption(new Option('--token <token>', 'the agent token for --server').env('HILBENCH_TOKEN'))
    .addOption(new Option('--backend <name>', 'the backend that runs the board').default('auto').choices(['auto', ...backendNames]))
    .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
    .addOption(new Option('--qemu <path>', 'qemu-system-arm executable').env('HILBENCH_QEMU'))
    .addOption(new Option('--renode <path>', 'Renode executable').env('HILBENCH_RENODE'))
    .addOption(new Option('--bench-file <file>', 'real boards attached to this host (docs/bench-file.md); enables the probe backend').env('HILBENCH_BENCH_FILE'))
    .addOption(new Option('--rp2040-bootrom <file>', 'RP2040 B1 boot ROM for Pico SDK images').env('HILBENCH_RP2040_BOOTROM'))
    .addOption(new Option('--idle-timeout-seconds <s>', 'end and free the board when no debugger is connected this long').default(300).argParser(positiveNumber))
    .addOption(new Option('--after-detach-seconds <s>', "after GDB detaches, let the firmware run on this long (device time), its UART still shown").default(2).argParser(positiveNumber))
    .action(async (firmware: string, opts: DebugOptions) => {
      if (opts.server) return debugOnServer(firmware, opts);
      const [{ foregroundClock }, { loadBoardCatalog }, { createBackends }, { resolveBoardBackend }, { loadFirmwareImage, checkImageForBoard }, { runDebugSession }] = await Promise.all([
        import('../core/clock.js'),
        import('../boards/catalog.js'),
        import('../harness/backend-registry.js'),
        import('../harness/board-resolution.js'),
        import('../backends/image-check.js'),
        import('../harness/debug/debug-session.js'),
      ]);
      const say = (line: string) => process.stderr.write(`hilbench debug: ${line}\n`);
      // What fails before the image is on the board never ran, as `hilbench flash` says it (docs/cli.md).
      const prepare = async () => {
        const board = loadBoardCatalog(opts.boardsDir).find((b) => b.id === opts.board);
        if (!board) throw new Error(`board "${opts.board}" is not in the catalog (hilbench boards lists them)`);
        const backends = createBackends({
          clock: foregroundClock,
          boards: [board],
          qemuBinary: opts.qemu, renodePath: opts.renode, rp2040BootromPath: opts.rp2040Bootrom,
          benchFile: opts.benchFile,
        });
        const resolved = await resolveBoardBackend(board, backends, opts.backend as never);
        if (!resolved.backend) throw new Error(`board ${board.id} cannot run here: ${resolved.offlineReason ?? 'no backend'}`);
        const image = loadFirmwareImage(readFileSync(firmware));
        checkImageForBoard(image, board);
        return { board, resolved: { backend: resolved.backend, backendName: resolved.backendName }, image };
      };
      let prepared: Awaited<ReturnType<typeof prepare>>;
      try {
        prepared = await prepare();
      } catch (err) {
        say(`never ran: ${(err as Error).message}`);
        process.exitCode = DEBUG_EXIT.neverRan;
        return;
      }
      const { board, resolved, image } = prepared;
      const interrupted = new AbortController();
      const onSigint = () => interrupted.abort(new Error('Ctrl-C'));
      process.once('SIGINT', onSigint);
      const decoder = new TextDecoder();
      try {
        const ended = await runDebugSession(resolved.backend, board, image, {
          clock: foregroundClock,
          gdbPort: opts.gdbPort,
          idleTimeoutMs: opts.idleTimeoutSeconds * 1000,
          afterDetachSeconds: opts.afterDetachSeconds,
          onUart: (chunk) => process.stdout.write(decoder.decode(chunk.bytes, { stream: true })),
          log: say,
          onListening: (listening) => {
            say(`${board.id} on ${resolved.backendName} is halted at reset; GDB's remote protocol is on 127.0.0.1:${listening}. In GDB:`);
            say(`  target remote localhost:${listening}`);
          },
          signal: interrupted.signal,
        });
        say(`${ended.outcome}: ${ended.reason}`);
        process.exitCode = DEBUG_EXIT[ended.outcome];
      } finally {
        process.off('SIGINT', onSigint);
      }
    });
}

/** `hilbench debug --server`: the board on a bench server's worker, GDB through the server (decision 0560). */
async function debugOnServer(firmware: string, opts: DebugOptions): Promise<void> {
  const { runRemoteDebugSession, RemoteNeverRan } = await import('./debug-on-server.js');
  const say = (line: string) => process.stderr.write(`hilbench debug: ${line}\n`);
  const neverRan = (message: string) => {
    say(`never ran: ${message}`);
    process.exitCode = DEBUG_EXIT.neverRan;
  };
  if (!opts.token) return neverRan('--server needs --token (an agent token: POST /api/v1/agents/register) or HILBENCH_TOKEN');
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(firmware);
  } catch (err) {
    return neverRan(`cannot read ${firmware}: ${(err as Error).message}`);
  }
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort(new Error('Ctrl-C'));
  process.once('SIGINT', onSigint);
  try {
    const ended = await runRemoteDebugSession({
      server: opts.server!,
      token: opts.token,
      board: opts.board,
      firmware: bytes,
      gdbPort: opts.gdbPort,
      idleTimeoutSeconds: opts.idleTimeoutSeconds,
      afterDetachSeconds: opts.afterDetachSeconds,
      onUart: (text) => process.stdout.write(text),
      log: say,
      onListening: (listening, job) => {
        say(`${opts.board} (job ${job.job_id} at ${opts.server}) is halted at reset; GDB's remote protocol is on 127.0.0.1:${listening}. In GDB:`);
        say(`  target remote localhost:${listening}`);
      },
      signal: interrupted.signal,
    });
    say(`${ended.outcome}: ${ended.reason}`);
    process.exitCode = DEBUG_EXIT[ended.outcome];
  } catch (err) {
    if (!(err instanceof RemoteNeverRan)) throw err;
    neverRan(err.message);
  } finally {
    process.off('SIGINT', onSigint);
  }
}
