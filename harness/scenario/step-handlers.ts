import { createHash } from 'node:crypto';
import { BackendError, type FirmwareImage } from '../../backends/backend.js';
import { ElfError, parseElf } from '../../core/elf.js';
import { type ScenarioContext, type DeviceState, checkAnswer } from './scenario-context.js';
import { ScenarioError } from './scenario-error.js';
import { type ClockKind, durationMs, type StepBody, type StepKind } from './scenario-schema.js';
import { readAnswer } from '../clients/http-answer.js';

/**
 * The step registry: one handler per command (wokwi-cli's TestScenario keeps the same shape). A
 * handler throws `ScenarioError` (`failed` or `timeout`) with what it expected and what came; the
 * runner adds file, step, time and UART tail.
 */
export type StepHandler<K extends StepKind> = (ctx: ScenarioContext, body: StepBody<K>) => Promise<void>;
export type StepRegistry = { [K in StepKind]: StepHandler<K> };

const DEFAULT_POLL_MS = 50;

const formBody = (fields: Record<string, string | undefined>) => {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.set(k, v);
  return form;
};

/** Polls `probe` on the clock of `kind` until it returns a value, for at most `timeoutMs`. */
async function pollUntil<T>(
  ctx: ScenarioContext,
  options: { kind: ClockKind; timeoutMs: number; pollMs: number; waitingFor: string; lastSeen: () => string; realTimeWork?: () => boolean },
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = ctx.nowMs(options.kind) + options.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (ctx.nowMs(options.kind) >= deadline) {
      throw new ScenarioError('timeout', `timed out after ${options.timeoutMs} ms (${options.kind} clock) waiting for ${options.waitingFor}`, [], {
        expected: options.waitingFor,
        actual: options.lastSeen(),
      });
    }
    await ctx.pollPause(Math.min(options.pollMs, Math.max(1, deadline - ctx.nowMs(options.kind))), options.kind, options.realTimeWork?.() ?? false);
  }
}

function sessionPath(ctx: ScenarioContext, session: string, suffix = ''): string {
  return `/api/v1/sessions/${encodeURIComponent(ctx.vars.substitute(session))}${suffix}`;
}

function requireDevice(ctx: ScenarioContext, kind: string): DeviceState {
  if (!ctx.device) throw new ScenarioError('failed', `${kind} needs an open device: flash one first with device-flash`);
  return ctx.device;
}

/** Runs the open device until `until()` holds, it stops, or `timeoutMs` passes on the clock of `kind`. */
async function runDevice(ctx: ScenarioContext, state: DeviceState, options: { kind: ClockKind; timeoutMs: number; until: () => boolean }): Promise<void> {
  await runDeviceUntil(ctx, state, { ...options, until: () => options.until() || ctx.failTextSeen() });
  // Even when the wait matched: a failure string printed on the way fails the scenario (wokwi --fail-text).
  ctx.checkFailText(state.uartText, `the UART output of ${state.device.board.id}`);
}

async function runDeviceUntil(ctx: ScenarioContext, state: DeviceState, options: { kind: ClockKind; timeoutMs: number; until: () => boolean }): Promise<void> {
  if (state.stopped || options.until()) return;
  const run = async (targetNanos: number) => {
    try {
      const stop = await state.device.run(targetNanos, { until: options.until, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      state.elapsedNanos = stop.elapsedNanos;
      if (stop.reason === 'exited' || stop.reason === 'crashed') state.stopped = stop;
    } catch (err) {
      if (err instanceof BackendError) throw new ScenarioError('failed', `device ${state.device.board.id}: ${err.kind}: ${err.message}`, [], { cause: err });
      throw err;
    }
  };
  if (options.kind === 'simulated') {
    // Simulated: the timeout is measured on the device's own clock (wokwi-cli does the same).
    await run(state.elapsedNanos + Math.round(options.timeoutMs * 1e6));
    return;
  }
  // Wall: run in 50 ms slices of device time until the host deadline, so a slow simulator gets real seconds.
  const deadline = ctx.nowMs('wall') + options.timeoutMs;
  while (!state.stopped && !options.until() && ctx.nowMs('wall') < deadline) {
    await run(state.elapsedNanos + 50_000_000);
  }
}

function stoppedText(state: DeviceState): string {
  const s = state.stopped;
  if (!s) return '';
  return s.reason === 'exited' ? `the firmware exited with code ${s.exitCode}` : s.reason === 'crashed' ? `the firmware crashed: ${s.message}` : '';
}

function findText(state: DeviceState, body: { text?: string | undefined; regex?: string | undefined }): { index: number; end: number } | undefined {
  const rest = state.uartText.slice(state.consumed);
  if (body.text !== undefined) {
    const i = rest.indexOf(body.text);
    return i < 0 ? undefined : { index: state.consumed + i, end: state.consumed + i + body.text.length };
  }
  const m = new RegExp(body.regex as string).exec(rest);
  return m ? { index: state.consumed + m.index, end: state.consumed + m.index + m[0].length } : undefined;
}

export const stepHandlers: StepRegistry = {
  async register(ctx, b) {
    const answer = await ctx.bench.request('POST', '/api/v1/agents/register', { body: formBody({ label: b.label === undefined ? undefined : ctx.vars.substitute(b.label) }) });
    ctx.accept(answer, 'register', b);
  },

  async 'open-session'(ctx, b) {
    const form = formBody({ board: ctx.board(b.board), idle_seconds: b['idle-seconds'] === undefined ? undefined : ctx.vars.substitute(String(b['idle-seconds'])) });
    const answer = await ctx.bench.request('POST', '/api/v1/sessions', { token: ctx.vars.substitute(b.token), body: form });
    ctx.accept(answer, 'open-session', b);
  },

  async 'get-session'(ctx, b) {
    ctx.accept(await ctx.bench.request('GET', sessionPath(ctx, b.session), { token: ctx.vars.substitute(b.token) }), 'get-session', b);
  },

  async heartbeat(ctx, b) {
    ctx.accept(await ctx.bench.request('POST', sessionPath(ctx, b.session, '/heartbeat'), { token: ctx.vars.substitute(b.token) }), 'heartbeat', b);
  },

  async 'end-session'(ctx, b) {
    ctx.accept(await ctx.bench.request('POST', sessionPath(ctx, b.session, '/end'), { token: ctx.vars.substitute(b.token) }), 'end-session', b);
  },

  async flash(ctx, b) {
    const form = new FormData();
    form.set('board', ctx.board(b.board));
    const fileName = ctx.vars.substitute(b.firmware).split('/').pop() ?? 'firmware.elf';
    form.set('firmware', new Blob([ctx.readFile(b.firmware)], { type: 'application/octet-stream' }), fileName);
    if (b['uart-seconds'] !== undefined) form.set('uart_seconds', ctx.vars.substitute(String(b['uart-seconds'])));
    if (b.session !== undefined) form.set('session', ctx.vars.substitute(b.session));
    const answer = await ctx.bench.request('POST', '/api/v1/jobs/flash', { ...(b.token !== undefined ? { token: ctx.vars.substitute(b.token) } : {}), body: form });
    ctx.accept(answer, 'flash', b);
  },

  async 'wait-job'(ctx, b) {
    const job = ctx.vars.substitute(b.job);
    const token = ctx.vars.substitute(b.token);
    const want = b.state ?? 'done';
    let last = 'no answer yet';
    // Real time is yielded only while the job is unfinished on a backend that runs in real time.
    let realTimeWork = false;
    const kind = ctx.clockOf(b.clock);
    const final = await pollUntil(
      ctx,
      {
        kind,
        timeoutMs: ctx.timeoutMsOf(b.timeout),
        pollMs: b.poll === undefined ? DEFAULT_POLL_MS : durationMs(b.poll),
        waitingFor: `job ${job} to finish`,
        lastSeen: () => last,
        realTimeWork: () => realTimeWork,
      },
      async () => {
        const answer = await ctx.bench.request('GET', `/api/v1/jobs/${encodeURIComponent(job)}`, { token });
        checkAnswer(answer, `GET job ${job}`, undefined);
        const record = answer.json as { state?: unknown; board?: unknown; uart?: { text?: unknown } | null; failure?: unknown } | undefined;
        last = `state ${String(record?.state)}`;
        const unfinished = record?.state !== 'done' && record?.state !== 'failed';
        realTimeWork = unfinished && ctx.target.simulatedHost && typeof record?.board === 'string' && (await ctx.benchBackendOf(record.board)) !== 'mock';
        if (typeof record?.uart?.text === 'string') {
          ctx.lastUart = record.uart.text;
          ctx.checkFailText(record.uart.text, `the UART of job ${job}`);
        }
        return record?.state === 'done' || record?.state === 'failed' ? answer : undefined;
      },
    );
    const record = final.json as { state: string; failure?: unknown };
    if (record.state !== want) {
      throw new ScenarioError('failed', `job ${job} ended ${record.state}, expected ${want}`, [], {
        expected: `state ${want}`,
        actual: `state ${record.state}${record.failure ? `, failure ${JSON.stringify(record.failure)}` : ''}`,
      });
    }
    ctx.accept(final, `job ${job}`, b);
  },

  async 'create-node'(ctx, b) {
    const { node, answer } = await ctx.relay.register(b.name === undefined ? {} : { name: ctx.vars.substitute(b.name) });
    checkAnswer(answer, 'create-node (POST /register)', b.expect === undefined ? undefined : ctx.vars.substituteDeep(b.expect));
    if (!node) return;
    ctx.nodes.set(b.as, node);
    ctx.vars.set(b.as, { node_id: node.nodeId, authorization: node.authorization, ...(answer.json as object) });
  },

  async 'post-item'(ctx, b) {
    const node = ctx.nodes.get(b.node);
    if (!node) throw new ScenarioError('failed', `post-item: no node ${b.node} (make it with create-node; made so far: ${[...ctx.nodes.keys()].join(', ') || 'none'})`);
    const answer = await ctx.relay.postClaim(node, { kind: ctx.vars.substitute(b.kind), title: ctx.vars.substitute(b.title), body: ctx.vars.substitute(b.body ?? '') });
    ctx.accept(answer, 'post-item', b);
  },

  async vote(ctx, b) {
    const node = ctx.nodes.get(b.node);
    if (!node) throw new ScenarioError('failed', `vote: no node ${b.node} (make it with create-node)`);
    const answer = await ctx.relay.vote(node, {
      item: ctx.vars.substitute(b.item),
      value: b.value,
      phase: b.phase ?? 'vote',
      slice: { ...(b.slice.t !== undefined ? { t: b.slice.t } : {}), v: b.slice.v.map((v) => ctx.vars.substitute(v)) },
    });
    ctx.accept(answer, `vote by ${b.node}`, b);
  },

  async 'expect-bulletin'(ctx, b) {
    const item = ctx.vars.substitute(b.item);
    const node = ctx.vars.substitute(b.node);
    const expected = ctx.vars.substituteDeep({
      ...(b.state !== undefined ? { state: b.state } : {}),
      ...(b.value !== undefined ? { value: b.value } : {}),
      ...((b.json ?? {}) as object),
    });
    let last = 'no answer yet';
    const kind = ctx.clockOf(b.clock);
    const answer = await pollUntil(
      ctx,
      { kind, timeoutMs: ctx.timeoutMsOf(b.timeout), pollMs: b.poll === undefined ? DEFAULT_POLL_MS : durationMs(b.poll), waitingFor: `bulletin of ${node} on ${item} to match ${JSON.stringify(expected)}`, lastSeen: () => last },
      async () => {
        const a = await ctx.relay.bulletin(item, node);
        last = `${a.status} ${a.text.slice(0, 400)}`;
        if (a.status !== 200) return undefined;
        try {
          checkAnswer(a, 'bulletin', { json: expected });
          return a;
        } catch {
          return undefined;
        }
      },
    );
    if (b.as) ctx.vars.set(b.as, answer.json);
  },

  async http(ctx, b) {
    const service = b.service ?? 'bench';
    const baseUrl = service === 'bench' ? ctx.target.benchUrl : ctx.target.relayUrl;
    if (!baseUrl) throw new ScenarioError('unsupported', `http: the target has no ${service} service`);
    const headers: Record<string, string> = ctx.vars.substituteDeep(b.headers ?? {});
    let body: RequestInit['body'] | undefined;
    if (b.form) body = formBody(ctx.vars.substituteDeep(b.form));
    else if (b.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(ctx.vars.substituteDeep(b.json));
    } else if (b.body !== undefined) body = ctx.vars.substitute(b.body);
    else if (b.multipart) {
      const form = new FormData();
      for (const [field, value] of Object.entries(b.multipart)) {
        if (typeof value === 'string') form.set(field, ctx.vars.substitute(value));
        else form.set(field, new Blob([ctx.readFile(value.file)]), value.filename ?? value.file.split('/').pop() ?? 'file');
      }
      body = form;
    }
    const url = baseUrl.replace(/\/+$/, '') + ctx.vars.substitute(b.path);
    const response = await ctx.fetch(url, { method: b.method, headers, ...(body !== undefined ? { body } : {}) });
    ctx.accept(await readAnswer(response), `${b.method} ${b.path}`, b);
  },

  async 'device-flash'(ctx, b) {
    const backend = ctx.target.backend;
    if (!backend) throw new ScenarioError('unsupported', 'device-flash: the target has no backend');
    const boardId = ctx.board(b.board);
    const board = ctx.target.boards.find((x) => x.id === boardId);
    if (!board) throw new ScenarioError('failed', `device-flash: unknown board ${boardId} (known: ${ctx.target.boards.map((x) => x.id).join(', ')})`);
    const bytes = ctx.readFile(b.firmware);
    let image: FirmwareImage;
    try {
      image = { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), elf: parseElf(bytes) };
    } catch (err) {
      if (err instanceof ElfError) throw new ScenarioError('failed', `device-flash: ${b.firmware} is not a usable ELF: ${err.message}`);
      throw err;
    }
    await ctx.closeDevice();
    try {
      const device = await backend.open(board, ctx.signal ? { signal: ctx.signal } : {});
      const state = ctx.attachDevice(device);
      await state.device.flash(image, ctx.signal ? { signal: ctx.signal } : {});
    } catch (err) {
      if (err instanceof BackendError) throw new ScenarioError('failed', `device-flash on ${backend.name}: ${err.kind}: ${err.message}`, [], { cause: err });
      throw err;
    }
  },

  async 'wait-serial'(ctx, b) {
    const state = requireDevice(ctx, 'wait-serial');
    const body = { text: b.text === undefined ? undefined : ctx.vars.substitute(b.text), regex: b.regex === undefined ? undefined : ctx.vars.substitute(b.regex) };
    const wanted = body.text !== undefined ? JSON.stringify(body.text) : `/${body.regex}/`;
    const kind = ctx.clockOf(b.clock);
    const timeoutMs = ctx.timeoutMsOf(b.timeout);
    const seen = () => JSON.stringify(state.uartText.slice(state.consumed).slice(-400));
    if (b.not) {
      // Run the whole timeout; the text must not show up at any point in it.
      await runDevice(ctx, state, { kind, timeoutMs, until: () => findText(state, body) !== undefined });
      const found = findText(state, body);
      if (found) throw new ScenarioError('failed', `wait-serial: ${wanted} appeared, and must not`, [], { expected: `no ${wanted} within ${timeoutMs} ms`, actual: seen() });
      return;
    }
    await runDevice(ctx, state, { kind, timeoutMs, until: () => findText(state, body) !== undefined });
    const found = findText(state, body);
    if (!found) {
      const stopped = stoppedText(state);
      throw new ScenarioError(stopped ? 'failed' : 'timeout', stopped ? `wait-serial: ${stopped} before ${wanted} appeared` : `wait-serial: timed out after ${timeoutMs} ms (${kind} clock) waiting for ${wanted}`, [], {
        expected: wanted,
        actual: seen(),
      });
    }
    // Consume up to the end of the match: two expected lines in one chunk are two separate waits.
    state.consumed = found.end;
  },

  async 'write-serial'(ctx, b) {
    const state = requireDevice(ctx, 'write-serial');
    const bytes = typeof b === 'string' ? new TextEncoder().encode(ctx.vars.substitute(b)) : b.text !== undefined ? new TextEncoder().encode(ctx.vars.substitute(b.text)) : Uint8Array.from(b.bytes ?? []);
    await state.device.writeUart(bytes);
  },

  async 'expect-exit'(ctx, b) {
    const state = requireDevice(ctx, 'expect-exit');
    const kind = ctx.clockOf(b.clock);
    const timeoutMs = ctx.timeoutMsOf(b.timeout);
    await runDevice(ctx, state, { kind, timeoutMs, until: () => false });
    const stop = state.stopped;
    const wanted = b.crash ? 'a crash' : `an exit${b.code === undefined ? '' : ` with code ${b.code}`}`;
    if (!stop) throw new ScenarioError('timeout', `expect-exit: the firmware still ran after ${timeoutMs} ms (${kind} clock)`, [], { expected: wanted, actual: 'still running' });
    const ok = b.crash ? stop.reason === 'crashed' : stop.reason === 'exited' && (b.code === undefined || stop.exitCode === b.code);
    if (!ok) throw new ScenarioError('failed', `expect-exit: expected ${wanted}, but ${stoppedText(state)}`, [], { expected: wanted, actual: stoppedText(state) });
  },

  async 'device-reset'(ctx) {
    const state = requireDevice(ctx, 'device-reset');
    await state.device.reset();
    state.elapsedNanos = 0;
    state.stopped = undefined;
    state.consumed = state.uartText.length;
  },

  async delay(ctx, b) {
    const ms = durationMs(typeof b === 'object' ? b.duration : b);
    const kind = ctx.clockOf(typeof b === 'object' ? b.clock : undefined);
    const state = ctx.device;
    // A delay is time for everything: the open device runs as long, and the host clock moves.
    if (state && !state.stopped) await runDevice(ctx, state, { kind: 'simulated', timeoutMs: ms, until: () => false });
    if (!(state && state.device.timeBase === 'wall' && kind === 'wall')) await ctx.pass(ms, kind);
  },

  async 'expect-pin'() {
    // Refused before the run (run-scenario.ts `checkTarget`); reaching here means a new backend forgot to say so.
    throw new ScenarioError('unsupported', 'expect-pin: no hilbench backend models pins');
  },

  async 'set-control'() {
    throw new ScenarioError('unsupported', 'set-control: no hilbench backend models pins');
  },
};

