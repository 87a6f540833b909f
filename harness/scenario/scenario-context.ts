import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Device, RunStop } from '../../backends/backend.js';
import { type Clock, foregroundClock, isoFromMs, sleep } from '../../core/clock.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { RelayClient, type RelayNode } from '../../clients/relay/relay-client.js';
import { matchJson } from './json-match.js';
import { ScenarioError } from './scenario-error.js';
import type { Scenario } from './scenario-schema.js';
import { type ClockKind, durationMs, type ResponseExpect } from './step-fields.js';
import type { ScenarioTarget } from './scenario-target.js';
import { ScenarioVars } from './scenario-vars.js';

/** An HTTP answer as steps see it. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** The open device of device steps, with its UART capture. */
export interface DeviceState {
  device: Device;
  /** Everything the UART printed since the device was opened, decoded as UTF-8. */
  uartText: string;
  /** Index into `uartText` up to which earlier waits consumed output. */
  consumed: number;
  /** Device time since reset release (of its own time base), from the last run. */
  elapsedNanos: number;
  /** Set once the firmware exited or crashed: it will print nothing more. */
  stopped: RunStop | undefined;
  detach(): void;
}

const MAX_UART_KEPT_CHARS = 256 * 1024;
/** The most of a scenario's serial log kept (and written to reports), characters. */
const MAX_SERIAL_LOG_CHARS = 1024 * 1024;

/** State shared by the steps of one scenario run. */
export class ScenarioContext {
  readonly vars = new ScenarioVars();
  readonly nodes = new Map<string, RelayNode>();
  device: DeviceState | undefined;
  /** The last UART text seen (device capture or a job's `uart.text`), for failure reports. */
  lastUart = '';
  /** Real milliseconds each request of the current step may take (the runner sets it per step). */
  requestTimeoutMs: number;
  /**
   * Everything the scenario's devices printed, as it came, and each finished job's UART: the
   * scenario's serial log (reports, `--serial-log-dir`). Bounded: past the limit, the tail.
   */
  serialLog = '';
  /** Told every piece of serial output as the log gets it (`hilbench run --verbose`). */
  onSerial: ((text: string) => void) | undefined;
  private readonly jobsLogged = new Set<string>();
  private benchClient: BenchClient | undefined;
  private relayClient: RelayClient | undefined;
  readonly startedMs: number;

  constructor(
    readonly scenario: Scenario,
    readonly target: ScenarioTarget,
    readonly signal: AbortSignal | undefined,
    runId: string = newRunId(),
  ) {
    this.startedMs = target.clock.nowMs();
    this.requestTimeoutMs = scenario.timeoutMs;
    // `${run.id}`: unique per run, so a file can make content-addressed things (relay claim
    // titles) new on every run against a long-lived server.
    this.vars.set('run', { id: runId });
    for (const [k, v] of Object.entries(scenario.vars)) this.vars.set(k, v);
  }

  get bench(): BenchClient {
    if (!this.target.benchUrl) throw new ScenarioError('unsupported', 'this step needs a bench service and the target has none (--bench-url)');
    this.benchClient ??= new BenchClient({ baseUrl: this.target.benchUrl, fetch: this.fetch });
    return this.benchClient;
  }

  get relay(): RelayClient {
    if (!this.target.relayUrl) throw new ScenarioError('unsupported', 'this step needs a relay service and the target has none (--relay-url)');
    this.relayClient ??= new RelayClient({ baseUrl: this.target.relayUrl, clock: this.target.clock, fetch: this.fetch });
    return this.relayClient;
  }

  /**
   * The target's fetch with a time limit: the whole answer (headers and body) must arrive within
   * `requestTimeoutMs` real milliseconds, or the step fails as a timeout naming the request. The
   * run's signal (overall time limit, cancellation) aborts it too. The answer is read here, whole,
   * so the limit covers a body that trickles.
   */
  readonly fetch: typeof fetch = async (input, init) => {
    const limitMs = this.requestTimeoutMs;
    const method = init?.method ?? 'GET';
    const url = input instanceof Request ? input.url : String(input);
    const controller = new AbortController();
    const timer = foregroundClock.setTimeout(() => {
      controller.abort(new ScenarioError('timeout', `${method} ${url}: no complete answer within ${limitMs} ms (real time; the step's timeout, or the file's)`, [], { expected: `an answer within ${limitMs} ms`, actual: 'none yet' }));
    }, limitMs);
    const signal = this.signal ? AbortSignal.any([controller.signal, this.signal]) : controller.signal;
    try {
      const response = await (this.target.fetch ?? fetch)(input, { ...init, signal });
      const bytes = await response.arrayBuffer();
      const noBody = response.status === 204 || response.status === 205 || response.status === 304 || method === 'HEAD';
      return new Response(noBody ? null : bytes, { status: response.status, statusText: response.statusText, headers: response.headers });
    } catch (err) {
      if (signal.aborted && signal.reason instanceof ScenarioError) throw signal.reason;
      throw err;
    } finally {
      foregroundClock.clearTimeout(timer);
    }
  };

  /** The step's clock, or the file's. */
  clockOf(stated: ClockKind | undefined): ClockKind {
    return stated ?? this.scenario.clock;
  }

  timeoutMsOf(stated: number | string | undefined): number {
    return stated === undefined ? this.scenario.timeoutMs : durationMs(stated);
  }

  /** Real host time: the target's `realClock`. */
  get realClock(): Clock {
    return this.target.realClock;
  }

  /** The host clock of `kind`: the target's clock for `simulated`, real time for `wall`. */
  clockFor(kind: ClockKind): Clock {
    return kind === 'simulated' ? this.target.clock : this.realClock;
  }

  /** Host time now on the clock of `kind`. */
  nowMs(kind: ClockKind): number {
    return this.clockFor(kind).nowMs();
  }

  /** Lets `ms` pass on the clock of `kind`: ticks the target's (fake) clock, or sleeps in real time. */
  async pass(ms: number, kind: ClockKind): Promise<void> {
    if (kind === 'simulated') await this.target.advance(ms);
    else await sleep(this.realClock, ms, this.signal);
  }

  /**
   * A pause between polls. On a fake clock it advances fake time only, unless `realTimeWork`:
   * then it also yields up to 50 real milliseconds, because a job on a real-time backend (QEMU, a
   * simulator) progresses in real time, and fake time racing far ahead of it would expire leases
   * and job deadlines the real service would not. Nothing else (relay polls, a job on mock) waits
   * in real time: a 30 s simulated timeout takes milliseconds.
   */
  async pollPause(ms: number, kind: ClockKind, realTimeWork = false): Promise<void> {
    if (kind === 'simulated' && this.target.simulatedHost && realTimeWork) {
      await Promise.all([this.target.advance(ms), sleep(this.realClock, Math.min(ms, 50), this.signal)]);
      return;
    }
    await this.pass(ms, kind);
  }

  private boardBackends: Map<string, string> | undefined;

  /** The backend the bench runs `boardId` on (GET /api/v1/boards, asked once per run), or undefined. */
  async benchBackendOf(boardId: string): Promise<string | undefined> {
    if (!this.boardBackends) {
      const answer = await this.bench.request('GET', '/api/v1/boards');
      const boards = (answer.json as { boards?: unknown } | undefined)?.boards;
      this.boardBackends = new Map(
        (Array.isArray(boards) ? boards : []).flatMap((b: unknown) => {
          const o = b as { id?: unknown; backend?: unknown } | null;
          return typeof o?.id === 'string' && typeof o.backend === 'string' ? [[o.id, o.backend] as [string, string]] : [];
        }),
      );
    }
    return this.boardBackends.get(boardId);
  }

  board(stated: string | undefined): string {
    const board = stated ?? this.scenario.board;
    // The loader refuses steps without a board when the file names none; this is the backstop.
    if (!board) throw new ScenarioError('invalid', 'no board: give board in the step or at the top of the file');
    return this.vars.substitute(board);
  }

  /** Reads a file named relative to the scenario file. */
  readFile(relative: string): Uint8Array {
    const file = path.resolve(path.dirname(this.scenario.file), this.vars.substitute(relative));
    try {
      return new Uint8Array(readFileSync(file));
    } catch (err) {
      throw new ScenarioError('failed', `cannot read ${relative} (${file}): ${(err as Error).message}`, [], { cause: err });
    }
  }

  /** Throws `failed` when UART `text` holds one of the file's `fail-text` strings. */
  checkFailText(text: string, where: string): void {
    const hit = this.scenario.failText.find((t) => text.includes(t));
    if (hit !== undefined) {
      throw new ScenarioError('failed', `fail-text ${JSON.stringify(hit)} appeared in ${where}`, [], { expected: `no ${JSON.stringify(hit)}`, actual: JSON.stringify(text.slice(-400)) });
    }
  }

  /** True when the open device printed a fail-text (so a wait can stop early). */
  failTextSeen(): boolean {
    const text = this.device?.uartText ?? '';
    return this.scenario.failText.some((t) => text.includes(t));
  }

  /** Stores an answer (`as`, `capture`) after checking it (`expect`, default: any 2xx). */
  accept(answer: Answer, what: string, options: { expect?: ResponseExpect | undefined; as?: string | undefined; capture?: Record<string, string> | undefined }): void {
    checkAnswer(answer, what, options.expect === undefined ? undefined : this.vars.substituteDeep(options.expect));
    if (options.as) this.vars.set(options.as, answer.json ?? answer.text);
    if (options.capture) {
      const scratch = new ScenarioVars();
      scratch.set('$', answer.json);
      for (const [name, ref] of Object.entries(options.capture)) {
        const value = scratch.lookup(`$.${ref}`);
        if (value === undefined) {
          throw new ScenarioError('failed', `${what}: capture ${name}: the answer has no ${ref}`, [], { expected: `a value at ${ref}`, actual: answer.text.slice(0, 400) });
        }
        this.vars.set(name, value);
      }
    }
  }

  /** Adds serial output to the scenario's log (bounded) and tells `onSerial`. */
  logSerial(text: string): void {
    if (text === '') return;
    this.serialLog += text;
    if (this.serialLog.length > MAX_SERIAL_LOG_CHARS) this.serialLog = this.serialLog.slice(this.serialLog.length - MAX_SERIAL_LOG_CHARS);
    this.onSerial?.(text);
  }

  /** Logs a finished job's UART once, under a header naming the job. */
  logJobUart(jobId: string, board: string, text: string): void {
    if (this.jobsLogged.has(jobId)) return;
    this.jobsLogged.add(jobId);
    this.logSerial(`--- job ${jobId} on ${board} ---\n${text}${text.endsWith('\n') ? '' : '\n'}`);
  }

  /** Opens capture on a freshly opened device. */
  attachDevice(device: Device): DeviceState {
    const decoder = new TextDecoder();
    const state: DeviceState = {
      device,
      uartText: '',
      consumed: 0,
      elapsedNanos: 0,
      stopped: undefined,
      detach: () => {},
    };
    this.logSerial(`--- device ${device.board.id} ---\n`);
    state.detach = device.onUart((chunk) => {
      const text = decoder.decode(chunk.bytes, { stream: true });
      state.uartText += text;
      this.logSerial(text);
      // Bounded: long runs keep the tail. Consumed output is what is dropped first.
      if (state.uartText.length > MAX_UART_KEPT_CHARS) {
        const cut = state.uartText.length - MAX_UART_KEPT_CHARS;
        state.uartText = state.uartText.slice(cut);
        state.consumed = Math.max(0, state.consumed - cut);
      }
      this.lastUart = state.uartText;
    });
    this.device = state;
    return state;
  }

  async closeDevice(): Promise<void> {
    const state = this.device;
    if (!state) return;
    this.device = undefined;
    state.detach();
    await state.device.close();
  }

  /** `at 2026-01-01T00:01:31.000Z (+91000 ms simulated)`, plus device time when a device is open. */
  describeTime(): string {
    const now = this.target.clock.nowMs();
    const host = `${isoFromMs(now)} (+${now - this.startedMs} ms ${this.target.simulatedHost ? 'simulated host time' : 'wall time'})`;
    const dev = this.device ? `, device ${this.device.device.board.id} at ${(this.device.elapsedNanos / 1e6).toFixed(3)} ms ${this.device.device.timeBase} time` : '';
    return host + dev;
  }

  /** The last few lines of UART output seen. */
  uartTail(lines = 8): string[] {
    return this.lastUart.split(/\r?\n/).filter((l) => l.length > 0).slice(-lines);
  }
}

/** 12 hex digits, unique per run for all practical purposes. */
export function newRunId(): string {
  return randomBytes(6).toString('hex');
}

const show = (text: string) => (text.length > 400 ? `${text.slice(0, 400)}...` : text);

/** Throws a `failed` ScenarioError when `answer` does not meet `expect` (default: a 2xx status). */
export function checkAnswer(answer: Answer, what: string, expect: ResponseExpect | undefined): void {
  const fail = (expected: string, actual: string) => {
    throw new ScenarioError('failed', `${what}: the answer does not match`, [], { expected, actual });
  };
  const statuses = expect?.status === undefined ? undefined : Array.isArray(expect.status) ? expect.status : [expect.status];
  if (statuses ? !statuses.includes(answer.status) : answer.status < 200 || answer.status > 299) {
    fail(`status ${statuses ? statuses.join(' or ') : '2xx'}`, `${answer.status}: ${show(answer.text)}`);
  }
  if (!expect) return;
  for (const [mode, expected] of [
    ['json', expect.json],
    ['json-exact', expect['json-exact']],
  ] as const) {
    if (expected === undefined) continue;
    if (answer.json === undefined) fail(`a JSON body (${mode})`, show(answer.text) || 'an empty body');
    const problem = matchJson(expected, answer.json, { exact: mode === 'json-exact' });
    if (problem) fail(`${mode} ${JSON.stringify(expected)}`, problem);
  }
  if (expect.text !== undefined || expect.regex !== undefined) {
    const found = expect.text !== undefined ? answer.text.includes(expect.text) : new RegExp(expect.regex as string).test(answer.text);
    const wanted = expect.text !== undefined ? JSON.stringify(expect.text) : `/${expect.regex}/`;
    if (found === Boolean(expect.not)) fail(`a body ${expect.not ? 'without' : 'with'} ${wanted}`, show(answer.text));
  }
  for (const [name, value] of Object.entries(expect.headers ?? {})) {
    const got = answer.headers.get(name);
    if (got !== value) fail(`header ${name}: ${value}`, got === null ? 'no such header' : `${name}: ${got}`);
  }
}
