/**
 * `hilbench run`: replays scenario files (docs/scenarios.md) against an in-process bench + relay
 * on a fake clock (default) or against remote services in real time. Returns the exit code;
 * bin/hilbench.ts is the only place that exits.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { BenchFileError, loadBenchFile } from '../backends/probe/bench-file.js';
import type { Board, BackendName } from '../boards/board-schema.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { clockFromFakeTimers, foregroundClock, systemClock } from '../core/clock.js';
import { createBackends } from '../harness/backend-registry.js';
import { loadScenario } from '../harness/scenario/load-scenario.js';
import { describeFailure, runScenario, type ScenarioResult, scenarioStatuses, type StepResult } from '../harness/scenario/run-scenario.js';
import { ScenarioError } from '../harness/scenario/scenario-error.js';
import { exitCodeOf, jsonReport, junitReport } from '../harness/scenario/scenario-report.js';
import { remoteTarget, type ScenarioTarget } from '../harness/scenario/scenario-target.js';
import type { Logger } from '../server/http/logger.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import type { BackendChoice } from '../harness/board-resolution.js';
import { startRelayServer } from '../server/relay/relay-service.js';

/** Every in-process run starts its fake clock here, so recorded times and expiries are reproducible. */
export const SCENARIO_START_MS = Date.UTC(2026, 0, 1);

export interface InProcessTarget {
  target: ScenarioTarget;
  close(): Promise<void>;
}

/**
 * Backend paths from the environment: `hilbench run` has no flags for them, and backends read no
 * environment themselves (only bin/ does).
 */
export function backendPathsFromEnv(env: NodeJS.ProcessEnv = process.env): { rp2040BootromPath?: string; renodePath?: string } {
  return {
    ...(env.HILBENCH_RP2040_BOOTROM ? { rp2040BootromPath: env.HILBENCH_RP2040_BOOTROM } : {}),
    ...(env.HILBENCH_RENODE ? { renodePath: env.HILBENCH_RENODE } : {}),
  };
}

/** The backend device steps run on: `auto` uses sim, the in-process real-execution backend. */
function deviceBackendName(choice: BackendChoice): BackendName {
  return choice === 'auto' ? 'sim' : choice;
}

/** Offline boards are expected on single-backend runs: only unexpected server errors are shown. */
const quietLogger: Logger = { info: () => {}, warn: () => {}, error: (message, cause) => console.error(`[hilbench] error: ${message}`, cause ?? "") };

/**
 * A fresh bench service and relay on 127.0.0.1:0, sharing one fake clock (never installed
 * globally), on a temporary data dir removed at `close()`. Device steps run on `backend`'s
 * backend (`auto` uses sim for them: the in-process real-execution backend).
 */
export async function startInProcessTarget(options: {
  backend: BackendChoice;
  boards?: readonly Board[];
  startMs?: number;
  logger?: Logger;
  /** Bench file of real boards (docs/bench-file.md): enables the probe backend. */
  benchFile?: string;
  /** RP2040 boot ROM and Renode executable; default `backendPathsFromEnv()`. */
  backendPaths?: { rp2040BootromPath?: string; renodePath?: string };
}): Promise<InProcessTarget> {
  const boards = options.boards ?? loadBoardCatalog();
  const fake = createClock(options.startMs ?? SCENARIO_START_MS);
  const clock = clockFromFakeTimers(fake);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-scenario-'));
  // Backends keep real time for their own process timeouts (QEMU, Renode); only the services' clock is fake.
  const backends = createBackends({ clock: systemClock, boards, ...(options.backendPaths ?? backendPathsFromEnv()), ...(options.benchFile ? { benchFile: options.benchFile } : {}) });
  const bench = await startBenchServer({
    port: 0,
    dataDir: path.join(dataDir, 'bench'),
    clock,
    boards,
    backends,
    backend: options.backend,
    publicBaseUrl: 'http://bench.scenario.test',
    logger: options.logger ?? quietLogger,
  });
  let relay;
  try {
    // Unexpected relay errors go to stderr (its default): a scenario run should show them.
    relay = await startRelayServer({ clock, dataDir: path.join(dataDir, 'relay') });
  } catch (err) {
    await bench.close();
    throw err;
  }
  const backend = backends[deviceBackendName(options.backend)];
  const target: ScenarioTarget = {
    description: `in-process bench and relay, backend ${options.backend}, simulated host clock`,
    benchUrl: bench.url,
    relayUrl: relay.baseUrl,
    clock,
    // Ref'd timers: a wall-clock wait may be the only pending work of the run.
    realClock: foregroundClock,
    advance: async (ms) => {
      await fake.tickAsync(ms);
    },
    simulatedHost: true,
    ...(backend ? { backend } : {}),
    boards,
  };
  return {
    target,
    close: async () => {
      await Promise.allSettled([bench.close(), relay.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Expands `*`, `**` and `?` in paths (Node 20 has no fs.glob); a folder means every scenario
 * file (`.yaml`, `.yml`) under it, as vitest and pytest take folders; other paths pass through.
 */
export function expandGlobs(patterns: readonly string[], cwd = process.cwd()): string[] {
  const out: string[] = [];
  for (const pattern of patterns) {
    if (!/[*?]/.test(pattern)) {
      const resolved = path.resolve(cwd, pattern);
      if (isDirectory(resolved)) out.push(...scenarioFilesUnder(resolved));
      else out.push(resolved);
      continue;
    }
    const parts = pattern.split(/[\\/]/);
    const firstGlob = parts.findIndex((p) => /[*?]/.test(p));
    const root = path.resolve(cwd, parts.slice(0, firstGlob).join('/') || '.');
    const rest = parts.slice(firstGlob).join('/');
    const source = rest
      .replace(/[.+^${}()|[\]]/g, '\\$&')
      .replace(/\*\*\//g, '\u0000')
      .replace(/\*\*/g, '.*')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')
      .replace(/\u0000/g, '(?:.*/)?');
    const re = new RegExp(`^${source}$`);
    const walk = (dir: string, rel: string) => {
      let names: string[];
      try {
        names = readdirSync(dir).sort();
      } catch {
        return;
      }
      for (const name of names) {
        const full = path.join(dir, name);
        const relative = rel ? `${rel}/${name}` : name;
        if (statSync(full).isDirectory()) walk(full, relative);
        else if (re.test(relative)) out.push(full);
      }
    };
    walk(root, '');
  }
  return [...new Set(out)];
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

/** Scenario files under `dir`, in name order; hidden folders and node_modules are skipped. */
function scenarioFilesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const full = path.join(dir, name);
    if (isDirectory(full)) found.push(...scenarioFilesUnder(full));
    else if (/\.ya?ml$/.test(name)) found.push(full);
  }
  return found;
}

export interface RunCommandOptions {
  files: string[];
  backend: BackendChoice;
  benchUrl?: string;
  relayUrl?: string;
  junit?: string;
  json?: string;
  vars?: Record<string, string>;
  /** Replaces every file's default wait timeout (`--timeout`, as wokwi-cli's), in milliseconds. */
  timeoutMs?: number;
  /** Real milliseconds each scenario may take (`--time-limit`), over the file's `time-limit`. */
  timeLimitMs?: number;
  boardsDir?: string;
  /** Bench file of real boards (`--bench-file`, docs/bench-file.md): enables the probe backend. */
  benchFile?: string;
  /** Where progress goes (default console.log): a line per step as it ends, a line per scenario. */
  print?: (line: string) => void;
  /** Where diagnostics go (default console.error): failures, usage errors. */
  printError?: (line: string) => void;
  /** Serial output live (`--verbose`): device UART as it comes, jobs' UART when read finished. */
  verbose?: boolean;
  /** Where serial output goes with `verbose` (default process.stdout). */
  writeSerial?: (text: string) => void;
  /** Writes each scenario's whole serial log to `<dir>/<scenario file name>.log` (`--serial-log-dir`). */
  serialLogDir?: string;
}

const rel = (file: string) => path.relative(process.cwd(), file) || file;

/**
 * Runs every file; prints a line per step as it ends and one per scenario (stdout), a block per
 * failure (stderr); writes reports and serial logs. Returns the exit code.
 */
export async function runCommand(options: RunCommandOptions): Promise<number> {
  const print = options.print ?? ((line: string) => console.log(line));
  const printError = options.printError ?? options.print ?? ((line: string) => console.error(line));
  const writeSerial = options.writeSerial ?? ((text: string) => void process.stdout.write(text));
  const progress = {
    onStep: (s: StepResult) => print(`  ${s.status.padEnd(7)} steps[${s.index}] ${s.kind}${s.name ? ` (${JSON.stringify(s.name)})` : ''} ${s.hostMs} ms`),
    ...(options.verbose ? { onSerial: writeSerial } : {}),
  };
  const files = expandGlobs(options.files);
  if (!files.length) {
    printError(`hilbench run: no scenario files match ${options.files.join(' ')}`);
    return 2;
  }
  const boards = options.boardsDir ? loadBoardCatalog(options.boardsDir) : loadBoardCatalog();
  if (options.backend === 'probe' && !options.benchFile) {
    printError('hilbench run: --backend probe needs --bench-file (or HILBENCH_BENCH_FILE): which real boards are attached (docs/bench-file.md)');
    return 2;
  }
  if (options.benchFile) {
    // Checked once before the first file, so a bad bench file is one clear usage error (exit 2), not one per scenario.
    try {
      loadBenchFile(options.benchFile);
    } catch (err) {
      if (!(err instanceof BenchFileError)) throw err;
      printError(`hilbench run: ${err.message}`);
      return 2;
    }
  }
  const remote = options.benchUrl !== undefined || options.relayUrl !== undefined;
  const backendPaths = backendPathsFromEnv();
  const results: ScenarioResult[] = [];
  const logsWritten = new Set<string>();
  for (const file of files) {
    let result: ScenarioResult;
    try {
      const loaded = loadScenario(file);
      const scenario = options.timeoutMs === undefined ? loaded : { ...loaded, timeoutMs: options.timeoutMs };
      if (remote) {
        const backends = createBackends({ clock: systemClock, boards, ...backendPaths, ...(options.benchFile ? { benchFile: options.benchFile } : {}) });
        const device = backends[deviceBackendName(options.backend)];
        const target = remoteTarget({ ...(options.benchUrl ? { benchUrl: options.benchUrl } : {}), ...(options.relayUrl ? { relayUrl: options.relayUrl } : {}), ...(device ? { backend: device } : {}), boards });
        print(`${rel(file)}: ${scenario.name}`);
        result = await runScenario(scenario, target, { ...progress, vars: options.vars ?? {}, ...(options.timeLimitMs !== undefined ? { timeLimitMs: options.timeLimitMs } : {}) });
      } else {
        const started = await startInProcessTarget({ backend: options.backend, boards, backendPaths, ...(options.benchFile ? { benchFile: options.benchFile } : {}) });
        try {
          print(`${rel(file)}: ${scenario.name}`);
          result = await runScenario(scenario, started.target, { ...progress, vars: options.vars ?? {}, ...(options.timeLimitMs !== undefined ? { timeLimitMs: options.timeLimitMs } : {}) });
        } finally {
          await started.close();
        }
      }
    } catch (err) {
      if (!(err instanceof ScenarioError)) throw err;
      result = { file, name: path.basename(file), target: '', status: 'invalid', steps: [], hostMs: 0, clockMs: 0, failure: { kind: err.kind, message: err.message, uartTail: [], issues: [...err.issues] } };
    }
    results.push(result);
    if (options.serialLogDir) {
      mkdirSync(options.serialLogDir, { recursive: true });
      // One file per scenario, named after its file; a second file of the same name gets a number.
      const base = path.basename(file).replace(/\.ya?ml$/, '');
      let name = `${base}.log`;
      for (let n = 2; logsWritten.has(name); n++) name = `${base}-${n}.log`;
      logsWritten.add(name);
      writeFileSync(path.join(options.serialLogDir, name), result.serialLog ?? '');
    }
    const extra = result.status === 'skipped' ? ` (${result.skipReason})` : ` (${result.steps.filter((s) => s.status === 'passed').length}/${result.steps.length} steps, ${result.hostMs} ms real, ${result.clockMs} ms on the target clock)`;
    print(`${result.status.toUpperCase().padEnd(11)} ${rel(file)}: ${result.name}${extra}`);
    if (result.failure) printError(result.status === 'invalid' ? result.failure.message : describeFailure(result));
  }
  const writeReport = (file: string, text: string) => {
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    writeFileSync(file, text);
  };
  if (options.junit) writeReport(options.junit, junitReport(results));
  if (options.json) writeReport(options.json, `${JSON.stringify(jsonReport(results, { generatedAtMs: systemClock.nowMs() }), null, 2)}\n`);
  const code = exitCodeOf(results);
  print(`${results.length} scenario${results.length === 1 ? '' : 's'}: ${scenarioStatuses.map((s) => `${results.filter((r) => r.status === s).length} ${s}`).join(', ')}; exit ${code}`);
  return code;
}
