import { foregroundClock, systemClock } from '../../core/clock.js';
import { pinProblems } from './pin-check.js';
import { ScenarioContext } from './scenario-context.js';
import { ScenarioError, type ScenarioErrorKind } from './scenario-error.js';
import { type Scenario, type ScenarioStep, stepNeeds } from './scenario-schema.js';
import type { ScenarioTarget } from './scenario-target.js';
import { ScenarioVars } from './scenario-vars.js';
import { type StepHandler, type StepRegistry, stepHandlers } from './step-registry.js';

export type StepStatus = 'passed' | 'failed' | 'not-run';
/** How a scenario ended, in the order the summary line of `hilbench run` counts them. */
export const scenarioStatuses = ['passed', 'failed', 'timeout', 'skipped', 'invalid', 'unsupported'] as const;
export type ScenarioStatus = (typeof scenarioStatuses)[number];

export interface StepResult {
  index: number;
  kind: string;
  name?: string;
  status: StepStatus;
  /** Real milliseconds the step took. */
  hostMs: number;
}

/** Why a scenario did not pass: everything a CI log needs to act on it. */
export interface ScenarioFailure {
  kind: ScenarioErrorKind;
  /** `steps[3] wait-serial ("boot banner")`, or absent when the file or target was refused. */
  step?: { index: number; kind: string; name?: string };
  message: string;
  expected?: string;
  actual?: string;
  /** Host (and device) time when it failed. */
  at?: string;
  /** The last UART lines seen (device capture or a job's output). */
  uartTail: string[];
  /** For `invalid`: every problem with its path. */
  issues: string[];
}

export interface ScenarioResult {
  file: string;
  name: string;
  target: string;
  status: ScenarioStatus;
  steps: StepResult[];
  failure?: ScenarioFailure;
  /** Why it was skipped (backend filter). */
  skipReason?: string;
  /** Real milliseconds the whole run took. */
  hostMs: number;
  /** Milliseconds that passed on the target's clock (simulated host time in process). */
  clockMs: number;
  /** What the scenario's devices and jobs printed (bounded; see ScenarioContext.serialLog). */
  serialLog?: string;
}

/** `steps[3] wait-serial ("boot")`. */
export function stepLabel(step: ScenarioStep, index: number): string {
  return `steps[${index}] ${step.kind}${step.name ? ` (${JSON.stringify(step.name)})` : ''}`;
}

/**
 * Refuses, before the first step, what the target cannot run: steps needing a service it lacks,
 * device steps without a backend, and pin steps the backend or board cannot run.
 */
export function checkTarget(scenario: Scenario, target: ScenarioTarget): void {
  const problems: string[] = [];
  scenario.steps.forEach((step, i) => {
    const need = stepNeeds(step.kind);
    const label = stepLabel(step, i);
    if (need === 'bench' && !target.benchUrl) problems.push(`${label}: needs a bench service (in process, or --bench-url)`);
    if (need === 'relay' && !target.relayUrl) problems.push(`${label}: needs a relay service (in process, or --relay-url)`);
    if ((need === 'device' || need === 'pins') && !target.backend) {
      problems.push(`${label}: needs a device backend, and ${target.description} has none available (mock, sim, qemu or renode with --backend; probe also needs --bench-file)`);
    }
    if (step.kind === 'http' && (step.body.service ?? 'bench') === 'relay' && !target.relayUrl) problems.push(`${label}: needs a relay service`);
    if (step.kind === 'http' && (step.body.service ?? 'bench') === 'bench' && !target.benchUrl) problems.push(`${label}: needs a bench service`);
  });
  problems.push(...pinProblems(scenario, target, (i) => stepLabel(scenario.steps[i]!, i)));
  if (problems.length) {
    throw new ScenarioError('unsupported', `${scenario.file}: cannot run on ${target.description}:\n  ${problems.join('\n  ')}`, problems);
  }
}

/**
 * Refuses, before the first step, device steps on boards the target's backend cannot run here
 * (unknown board, or the backend's own `availability` reason). Boards named through variables
 * captured later are checked when their step runs.
 */
export async function checkDeviceBoards(scenario: Scenario, target: ScenarioTarget, vars: Record<string, string>): Promise<void> {
  if (!target.backend) return;
  const initial = new ScenarioVars();
  for (const [k, v] of Object.entries({ ...scenario.vars, ...vars })) initial.set(k, v);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, step] of scenario.steps.entries()) {
    if (step.kind !== 'device-flash') continue;
    let boardId: string;
    try {
      boardId = initial.substitute(step.body.board ?? scenario.board ?? '');
    } catch {
      continue;
    }
    if (seen.has(boardId)) continue;
    seen.add(boardId);
    const board = target.boards.find((b) => b.id === boardId);
    if (!board) {
      problems.push(`${stepLabel(step, i)}: unknown board ${boardId} (known: ${target.boards.map((b) => b.id).join(', ')})`);
      continue;
    }
    const availability = await target.backend.availability(board);
    if (!availability.available) problems.push(`${stepLabel(step, i)}: backend ${target.backend.name} cannot run ${boardId} here: ${availability.reason}`);
  }
  if (problems.length) throw new ScenarioError('unsupported', `${scenario.file}: cannot run on ${target.description}:\n  ${problems.join('\n  ')}`, problems);
}

/**
 * The backend a scenario's `backends:` filter is about. A file with bench steps against a remote
 * bench runs on whatever backend that server gives its board (asked with GET /api/v1/boards), not
 * on the local `--backend`; otherwise (in process, or device steps only) the target's backend.
 */
export async function filterBackend(scenario: Scenario, target: ScenarioTarget, vars: Record<string, string>): Promise<{ name: string; where: string } | undefined> {
  if (!scenario.backends) return undefined;
  const benchSteps = scenario.steps.some((s) => stepNeeds(s.kind) === 'bench');
  if (!benchSteps || target.simulatedHost || !target.benchUrl) {
    return target.backend ? { name: target.backend.name, where: "the target's backend" } : undefined;
  }
  const initial = new ScenarioVars();
  for (const [k, v] of Object.entries({ ...scenario.vars, ...vars })) initial.set(k, v);
  let boardId: string | undefined;
  try {
    boardId = scenario.board === undefined ? undefined : initial.substitute(scenario.board);
  } catch {
    boardId = undefined;
  }
  const boards = await benchBoards(target);
  const backends = [...new Set(boards.filter((b) => boardId === undefined || b.id === boardId).map((b) => b.backend))];
  if (boardId !== undefined && backends.length === 0) {
    throw new ScenarioError('unsupported', `${scenario.file}: the bench at ${target.benchUrl} has no board ${boardId} (it has: ${boards.map((b) => b.id).join(', ') || 'none'})`);
  }
  // Without a file-level board, the file runs if any of the server's backends is allowed.
  const name = backends.find((b) => (scenario.backends as readonly string[] | undefined)?.includes(b)) ?? backends.join(', ');
  return { name, where: `the bench's backend${boardId ? ` for ${boardId}` : 's'}` };
}

/** One board as GET /api/v1/boards lists it (the fields the runner reads). */
export interface BenchBoard {
  id: string;
  backend: string;
  status?: string;
  offlineReason?: string;
}

/** The bench's boards with their backends (GET /api/v1/boards), or an `unsupported` error saying why not. */
export async function benchBoards(target: ScenarioTarget): Promise<BenchBoard[]> {
  const url = `${(target.benchUrl ?? '').replace(/\/+$/, '')}/api/v1/boards`;
  let body: unknown;
  try {
    const res = await (target.fetch ?? fetch)(url);
    if (!res.ok) throw new Error(`answered ${res.status}`);
    body = await res.json();
  } catch (err) {
    throw new ScenarioError('unsupported', `cannot list the bench's boards (GET ${url}): ${describeCause(err)}`, [], { cause: err });
  }
  const boards = (body as { boards?: unknown } | null)?.boards;
  if (!Array.isArray(boards)) throw new ScenarioError('unsupported', `GET ${url} answered no boards list`);
  return boards.flatMap((b: unknown) => {
    const o = b as { id?: unknown; backend?: unknown; status?: unknown; offline_reason?: unknown } | null;
    if (typeof o?.id !== 'string' || typeof o.backend !== 'string') return [];
    return [{ id: o.id, backend: o.backend, ...(typeof o.status === 'string' ? { status: o.status } : {}), ...(typeof o.offline_reason === 'string' ? { offlineReason: o.offline_reason } : {}) }];
  });
}

/**
 * Refuses, before the first step, bench steps (`open-session`, `flash`) on a board the bench does
 * not have or runs on no backend (offline, e.g. `--backend qemu` with the default board pico), so
 * the run is UNSUPPORTED (exit 2), not a failure halfway. Steps that expect a refusal (a non-2xx
 * `expect.status`) are left alone: asking for an unknown board is what they test.
 */
export async function checkBenchBoards(scenario: Scenario, target: ScenarioTarget, vars: Record<string, string>): Promise<void> {
  if (!target.benchUrl) return;
  const initial = new ScenarioVars();
  for (const [k, v] of Object.entries({ ...scenario.vars, ...vars })) initial.set(k, v);
  const wanted = new Map<string, string>();
  for (const [i, step] of scenario.steps.entries()) {
    if (step.kind !== 'open-session' && step.kind !== 'flash') continue;
    const status = step.body.expect?.status;
    const statuses = status === undefined ? [] : Array.isArray(status) ? status : [status];
    if (statuses.length && !statuses.some((s) => s >= 200 && s <= 299)) continue;
    let boardId: string;
    try {
      boardId = initial.substitute(step.body.board ?? scenario.board ?? '');
    } catch {
      continue; // named through a variable captured later
    }
    if (boardId && !wanted.has(boardId)) wanted.set(boardId, stepLabel(step, i));
  }
  if (!wanted.size) return;
  const boards = await benchBoards(target);
  const problems: string[] = [];
  for (const [boardId, label] of wanted) {
    const board = boards.find((b) => b.id === boardId);
    if (!board) problems.push(`${label}: the bench has no board ${boardId} (it has: ${boards.map((b) => b.id).join(', ') || 'none'}; choose one with --var board=...)`);
    else if (board.status === 'offline') {
      problems.push(`${label}: board ${boardId} is offline on the bench (backend ${board.backend}${board.offlineReason ? `: ${board.offlineReason}` : ''}); choose a board it runs with --var board=...`);
    }
  }
  if (problems.length) throw new ScenarioError('unsupported', `${scenario.file}: cannot run on ${target.description}:\n  ${problems.join('\n  ')}`, problems);
}

/** `message (ECONNRESET)`, with the underlying `cause.code` fetch hides under "fetch failed". */
export function describeCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const codes: string[] = [];
  let c: unknown = err.cause;
  for (let depth = 0; c && depth < 4; depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    const msg = (c as { message?: unknown }).message;
    if (typeof code !== 'string' && typeof msg === 'string' && msg) codes.push(msg);
    c = (c as { cause?: unknown }).cause;
  }
  return codes.length ? `${err.message} (${codes.join(': ')})` : err.message;
}

/** Real time a scenario may take when neither the file (`time-limit`) nor the caller says. */
export const DEFAULT_TIME_LIMIT_MS = 10 * 60_000;

export interface RunScenarioOptions {
  /** Variables set before the first step (`--var name=value`), over the file's `vars`. */
  vars?: Record<string, string>;
  signal?: AbortSignal;
  /** Replaces handlers (tests); default `stepHandlers`. */
  handlers?: Partial<StepRegistry>;
  /** Real milliseconds the whole run may take, over the file's `time-limit` (default DEFAULT_TIME_LIMIT_MS). */
  timeLimitMs?: number;
  /** `${run.id}` of this run (default: 12 random hex digits). */
  runId?: string;
  /** Called after every step (progress output). */
  onStep?: (result: StepResult, step: ScenarioStep) => void;
  /** Told serial output as it comes: device UART live, a job's UART when it is read finished. */
  onSerial?: (text: string) => void;
}

/**
 * Runs `scenario` against `target`, step by step, stopping at the first failure. Never throws for
 * a scenario's own failure: the result says what happened.
 */
export async function runScenario(scenario: Scenario, target: ScenarioTarget, options: RunScenarioOptions = {}): Promise<ScenarioResult> {
  const hostStart = systemClock.nowMs();
  const clockStart = target.clock.nowMs();
  const steps: StepResult[] = scenario.steps.map((s, index) => ({ index, kind: s.kind, ...(s.name ? { name: s.name } : {}), status: 'not-run', hostMs: 0 }));
  let serialLogOf = () => '';
  const result = (status: ScenarioStatus, extra: Partial<ScenarioResult> = {}): ScenarioResult => ({
    serialLog: serialLogOf(),
    file: scenario.file,
    name: scenario.name,
    target: target.description,
    status,
    steps,
    hostMs: systemClock.nowMs() - hostStart,
    clockMs: target.clock.nowMs() - clockStart,
    ...extra,
  });

  try {
    const backend = await filterBackend(scenario, target, options.vars ?? {});
    if (scenario.backends && backend && !(scenario.backends as readonly string[]).includes(backend.name)) {
      // Says the flag that runs it (issue 31): `hilbench run` defaults to the mock backend.
      return result('skipped', { skipReason: `runs only on ${scenario.backends.join(', ')}; ${backend.where} is ${backend.name} (run it with --backend ${scenario.backends[0]})` });
    }
    checkTarget(scenario, target);
    await checkDeviceBoards(scenario, target, options.vars ?? {});
    await checkBenchBoards(scenario, target, options.vars ?? {});
  } catch (err) {
    const e = err as ScenarioError;
    return result('unsupported', { failure: { kind: 'unsupported', message: e.message, uartTail: [], issues: [...e.issues] } });
  }

  // The overall limit, in real time: a step stuck on something no timeout covers (a backend
  // call, a fake clock that never fires) still ends the run with a report.
  const limitMs = options.timeLimitMs ?? scenario.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS;
  const limit = new AbortController();
  const limitTimer = foregroundClock.setTimeout(() => {
    limit.abort(new ScenarioError('timeout', `the scenario ran over its time limit of ${limitMs} ms (real time; time-limit in the file)`, [], { expected: `done within ${limitMs} ms`, actual: 'still running' }));
  }, limitMs);
  const signal = options.signal ? AbortSignal.any([limit.signal, options.signal]) : limit.signal;
  const aborted = new Promise<never>((_resolve, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  const ctx = new ScenarioContext(scenario, target, signal, options.runId);
  ctx.onSerial = options.onSerial;
  serialLogOf = () => ctx.serialLog;
  for (const [k, v] of Object.entries(options.vars ?? {})) ctx.vars.set(k, v);
  const handlers = { ...stepHandlers, ...options.handlers } as StepRegistry;
  try {
    for (const [index, step] of scenario.steps.entries()) {
      const started = systemClock.nowMs();
      const stepResult = steps[index] as StepResult;
      try {
        if (signal.aborted) throw signal.reason;
        const stated = typeof step.body === 'object' && step.body !== null && !Array.isArray(step.body) ? (step.body as { timeout?: number | string }).timeout : undefined;
        ctx.requestTimeoutMs = ctx.timeoutMsOf(stated);
        await Promise.race([(handlers[step.kind] as StepHandler<typeof step.kind>)(ctx, step.body as never), aborted]);
        stepResult.status = 'passed';
      } catch (err) {
        stepResult.status = 'failed';
        const e =
          err instanceof ScenarioError ? err : new ScenarioError('failed', `unexpected error: ${describeCause(err)}`, [], { cause: err });
        return result(e.kind === 'timeout' ? 'timeout' : e.kind === 'unsupported' ? 'unsupported' : 'failed', {
          failure: {
            kind: e.kind,
            step: { index, kind: step.kind, ...(step.name ? { name: step.name } : {}) },
            message: e.message,
            ...(e.expected !== undefined ? { expected: e.expected } : {}),
            ...(e.actual !== undefined ? { actual: e.actual } : {}),
            at: ctx.describeTime(),
            uartTail: ctx.uartTail(),
            issues: [...e.issues],
          },
        });
      } finally {
        stepResult.hostMs = systemClock.nowMs() - started;
        options.onStep?.(stepResult, step);
      }
    }
    return result('passed');
  } finally {
    foregroundClock.clearTimeout(limitTimer);
    await ctx.closeDevice();
  }
}

/** One readable block for a failed result: file, step, time, expected, actual, UART tail. */
export function describeFailure(r: ScenarioResult): string {
  const f = r.failure;
  if (!f) return '';
  const lines = [`${r.file}: ${r.name}: ${r.status.toUpperCase()}${f.step ? ` at steps[${f.step.index}] ${f.step.kind}${f.step.name ? ` (${JSON.stringify(f.step.name)})` : ''}` : ''}`, `  ${f.message}`];
  if (f.expected !== undefined) lines.push(`  expected: ${f.expected}`);
  if (f.actual !== undefined) lines.push(`  actual:   ${f.actual}`);
  if (f.at) lines.push(`  at:       ${f.at}`);
  if (f.uartTail.length) lines.push('  last UART lines:', ...f.uartTail.map((l) => `    | ${l}`));
  return lines.join('\n');
}
