/**
 * Rebuilds every example firmware image from source and checks that the sources still produce
 * working firmware, and that the committed images still work:
 *
 *   npx tsx ci/check-firmware.ts [--committed-only] [--keep DIR] [--hello-seconds N]
 *
 * For each manifest entry, both the committed ELF and the fresh build are run on the emulator
 * that backs the board (docs/firmware.md, "What the check compares"):
 *   - QEMU boards: qemu-system-arm with semihosting; the UART text must match `uartPattern` and
 *     the exit status must be the manifest's (3 for exit, 134 for a lockup; hello runs until
 *     the time limit).
 *   - sim boards (pico, uno): rp2040js / avr8js directly (firmware/examples/run-sim.ts); the UART
 *     text must match, the stop reason and exit code must be the manifest's, and the fresh build
 *     must print exactly what the committed image prints.
 *   - Renode boards: Renode cannot run here. The fresh build must pass checkImageForBoard and
 *     have the same loadable segment layout and symbols as the committed image; and where a QEMU
 *     machine has the same memory map and console UART (`qemuStandIns`), both images also run
 *     there, as a partial check of the register-level code.
 * Byte-identity with the committed image is reported, not required: builds are reproducible
 * with one toolchain but differ across gcc/binutils versions.
 *
 * Needs arm-none-eabi-gcc, avr-gcc and qemu-system-arm (Debian: gcc-arm-none-eabi,
 * libnewlib-arm-none-eabi, gcc-avr, avr-libc, qemu-system-arm). Exit status 0 = all good.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkImageForBoard, loadFirmwareImage } from '../backends/image-check.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { loadableSegments, parseElf } from '../core/elf.js';
import { type FirmwareEntry, firmwareDir, firmwarePath, loadFirmwareManifest } from '../firmware/examples/firmware-manifest.js';
import { runSimBoard } from '../firmware/examples/run-sim.js';

interface Options {
  committedOnly: boolean;
  keepDir: string | undefined;
  helloSeconds: number;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { committedOnly: false, keepDir: undefined, helloSeconds: 3 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--committed-only') options.committedOnly = true;
    else if (arg === '--keep' && argv[i + 1]) options.keepDir = argv[++i];
    else if (arg === '--hello-seconds' && Number(argv[i + 1]) > 0) options.helloSeconds = Number(argv[++i]);
    else throw new Error(`unknown argument ${arg ?? ''} (see the comment at the top of ci/check-firmware.ts)`);
  }
  return options;
}

interface QemuResult {
  stdout: string;
  stderr: string;
  status: number | null;
  timedOut: boolean;
}

/** Runs one image on QEMU for at most `seconds` of wall time (QEMU without icount runs in host time). */
/**
 * QEMU machines that can stand in for boards QEMU does not model: same flash/SRAM addresses and
 * the console UART at the same address. The STM32F4DISCOVERY's STM32F407 and the Netduino Plus
 * 2's STM32F405 share RM0090's memory map; QEMU wires USART2 (0x40004400) to its second -serial.
 */
export const qemuStandIns: Readonly<Record<string, { machine: string; serialIndex: number }>> = {
  'stm32f4-discovery': { machine: 'netduinoplus2', serialIndex: 1 },
};

export function runQemu(machine: string, file: string, seconds: number, serialIndex = 0): Promise<QemuResult> {
  // Earlier serial ports go to null so that `serialIndex` is the one on stdout.
  const serials = [...Array.from({ length: serialIndex }, () => ['-serial', 'null']).flat(), '-serial', 'stdio'];
  return new Promise((resolve, reject) => {
    const child = spawn(
      'qemu-system-arm',
      ['-M', machine, '-nographic', '-monitor', 'none', ...serials, '-semihosting-config', 'enable=on,target=native', '-kernel', file],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let killedAtLimit = false;
    child.stdout.setEncoding('latin1').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      killedAtLimit = true;
      // SIGKILL, not SIGTERM: QEMU catches SIGTERM and exits with 0, which reads like an exit of its own.
      child.kill('SIGKILL');
    }, seconds * 1000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // The limit counts only if our SIGKILL is what ended QEMU. The sim checks run synchronously on
      // this thread; when one blocks the loop past the limit, the timer's callback runs before the
      // exit that already happened is read, and an image that aborted in 0.1 s would be called hung.
      const timedOut = killedAtLimit && signal === 'SIGKILL';
      // A lockup ends in abort(): the shell convention 128 + SIGABRT(6) = 134.
      resolve({ stdout, stderr, status: code ?? (signal === 'SIGABRT' ? 134 : null), timedOut });
    });
  });
}

/** What QEMU said, briefly: its fatal line if it has one (a lockup is followed by a register dump), else the last lines. */
function stderrSummary(text: string): string {
  const fatal = text.split('\n').find((line) => line.includes('fatal'));
  return fatal ?? text.trimEnd().split('\n').slice(-3).join(' | ');
}

export async function checkQemu(entry: FirmwareEntry, file: string, machine: string, helloSeconds: number, serialIndex = 0): Promise<string[]> {
  const seconds = entry.outcome === 'runs' ? helloSeconds : 10;
  const run = await runQemu(machine, file, seconds, serialIndex);
  // A stand-in runs a non-QEMU board's image: it exits like the QEMU boards' images do.
  const qemuExitStatus = entry.qemuExitStatus ?? { runs: null, exits: entry.exitCode, crashes: 134 }[entry.outcome];
  const problems: string[] = [];
  if (!new RegExp(entry.uartPattern).test(run.stdout)) {
    problems.push(`UART output ${JSON.stringify(run.stdout.slice(0, 200))} does not match /${entry.uartPattern}/ (stderr: ${stderrSummary(run.stderr)})`);
  }
  if (entry.outcome === 'runs' && !run.timedOut) problems.push(`expected to run for ${seconds} s, but QEMU exited with ${run.status}: ${stderrSummary(run.stderr)}`);
  if (entry.outcome !== 'runs') {
    if (run.timedOut) problems.push(`expected QEMU to exit with ${qemuExitStatus}, still running after ${seconds} s`);
    else if (run.status !== qemuExitStatus) problems.push(`QEMU exit status ${run.status}, expected ${qemuExitStatus}: ${stderrSummary(run.stderr)}`);
  }
  if (entry.outcome === 'crashes' && !run.stderr.includes('Lockup')) problems.push(`expected a Lockup report on stderr, got: ${stderrSummary(run.stderr)}`);
  return problems;
}

export function checkSim(entry: FirmwareEntry, bytes: Uint8Array): { problems: string[]; fingerprint: string } {
  const run = runSimBoard(entry.board, bytes, { simulatedSeconds: entry.outcome === 'runs' ? 1 : 0.5 });
  const problems: string[] = [];
  if (!new RegExp(entry.uartPattern).test(run.uart)) problems.push(`UART output ${JSON.stringify(run.uart.slice(0, 200))} does not match /${entry.uartPattern}/`);
  const expectedReason = { runs: 'elapsed', exits: 'exited', crashes: 'crashed' }[entry.outcome];
  if (run.stop.reason !== expectedReason) problems.push(`stopped with ${JSON.stringify(run.stop)}, expected reason ${expectedReason}`);
  if (run.stop.reason === 'exited' && run.stop.exitCode !== entry.exitCode) problems.push(`exit code ${run.stop.exitCode}, expected ${entry.exitCode}`);
  return { problems, fingerprint: JSON.stringify({ uart: run.uart, stop: run.stop }) };
}

/** Segment layout and global symbol names: what must not change between builds of the same source. */
function layout(bytes: Uint8Array): string {
  const elf = parseElf(bytes);
  const segments = loadableSegments(elf).map((s) => `${s.vaddr.toString(16)}@${s.paddr.toString(16)}`);
  const symbols = elf.symbols
    .filter((s) => s.binding === 1)
    .map((s) => s.name)
    .sort();
  return JSON.stringify({ machine: elf.machine, entryIsSet: elf.entry !== 0 || elf.machine === 83, segments, symbols });
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const manifest = loadFirmwareManifest();
  const boards = new Map(loadBoardCatalog().map((b) => [b.id, b]));

  let buildDir: string | undefined;
  if (!options.committedOnly) {
    buildDir = options.keepDir ?? mkdtempSync(path.join(tmpdir(), 'hilbench-firmware-'));
    const build = spawnSync(path.join(firmwareDir, 'build.sh'), ['--out', buildDir], { encoding: 'utf8' });
    if (build.status !== 0) {
      process.stderr.write(`build.sh failed with status ${build.status}:\n${build.stderr}${build.error ? String(build.error) : ''}\n`);
      return 1;
    }
    process.stdout.write(`rebuilt ${manifest.firmware.length} images into ${buildDir}\n`);
  }

  let failures = 0;
  let identical = 0;
  const checkEntry = async (entry: FirmwareEntry): Promise<string[]> => {
    const board = boards.get(entry.board);
    if (!board) return [`board ${entry.board} is not in the catalog`];
    const committedFile = firmwarePath(entry);
    const committed = new Uint8Array(readFileSync(committedFile));
    const rebuiltFile = buildDir ? path.join(buildDir, entry.path) : undefined;
    const rebuilt = rebuiltFile ? new Uint8Array(readFileSync(rebuiltFile)) : undefined;
    const problems: string[] = [];
    const label = (what: string, list: string[]) => list.map((p) => `${what}: ${p}`);

    for (const [what, bytes] of [['committed', committed], ['rebuilt', rebuilt]] as const) {
      if (!bytes) continue;
      try {
        checkImageForBoard(loadFirmwareImage(bytes), board);
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
      }
    }
    if (rebuilt && Buffer.compare(Buffer.from(rebuilt), Buffer.from(committed)) === 0) identical++;

    if (entry.backend === 'qemu') {
      const machine = board.backends.qemu!.machine;
      problems.push(...label('committed', await checkQemu(entry, committedFile, machine, options.helloSeconds)));
      if (rebuiltFile) problems.push(...label('rebuilt', await checkQemu(entry, rebuiltFile, machine, options.helloSeconds)));
    } else if (entry.backend === 'sim') {
      const old = checkSim(entry, committed);
      problems.push(...label('committed', old.problems));
      if (rebuilt) {
        const fresh = checkSim(entry, rebuilt);
        problems.push(...label('rebuilt', fresh.problems));
        if (fresh.fingerprint !== old.fingerprint) problems.push(`rebuilt prints or stops differently from the committed image: ${fresh.fingerprint} vs ${old.fingerprint}`);
      }
    } else {
      if (rebuilt && layout(rebuilt) !== layout(committed)) {
        problems.push(`rebuilt layout ${layout(rebuilt)} differs from committed ${layout(committed)} (cannot run ${entry.backend} here)`);
      }
      const standIn = qemuStandIns[entry.board];
      if (standIn) {
        const on = `on QEMU ${standIn.machine} (stand-in)`;
        problems.push(...label(`committed ${on}`, await checkQemu(entry, committedFile, standIn.machine, options.helloSeconds, standIn.serialIndex)));
        if (rebuiltFile) problems.push(...label(`rebuilt ${on}`, await checkQemu(entry, rebuiltFile, standIn.machine, options.helloSeconds, standIn.serialIndex)));
      }
    }
    return problems;
  };

  // QEMU runs are wall-time bound, but the guest must get CPU to print its ticks in time:
  // two at a time keeps a small CI machine from starving them.
  const results: string[][] = new Array<string[]>(manifest.firmware.length);
  let next = 0;
  const worker = async () => {
    while (next < manifest.firmware.length) {
      const i = next++;
      results[i] = await checkEntry(manifest.firmware[i]!);
    }
  };
  await Promise.all([worker(), worker()]);
  manifest.firmware.forEach((entry, i) => {
    const problems = results[i]!;
    const standIn = qemuStandIns[entry.board];
    const how = entry.checkedWith ?? `${entry.backend} (not runnable here: layout compared${standIn ? `, run on QEMU ${standIn.machine} as a stand-in` : ''})`;
    if (problems.length === 0) process.stdout.write(`ok   ${entry.path} on ${how}\n`);
    else {
      failures++;
      process.stdout.write(`FAIL ${entry.path} on ${how}\n${problems.map((p) => `       ${p}\n`).join('')}`);
    }
  });
  if (buildDir) {
    process.stdout.write(`${identical}/${manifest.firmware.length} rebuilt images are byte-identical to the committed ones\n`);
    if (!options.keepDir) rmSync(buildDir, { recursive: true, force: true });
  }
  process.stdout.write(failures === 0 ? 'firmware check passed\n' : `firmware check failed: ${failures} image(s)\n`);
  return failures === 0 ? 0 : 1;
}

// Run only as a script, so tests can import the checks without starting a full run.
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  main().then(
    (status) => process.exit(status),
    (err: unknown) => {
      process.stderr.write(`check-firmware: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(2);
    },
  );
}
