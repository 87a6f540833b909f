import { BackendError } from '../../backends/backend.js';
import type { DeviceState, ScenarioContext } from './scenario-context.js';
import { ScenarioError } from './scenario-error.js';
import type { ClockKind } from './step-fields.js';

/** What the device steps share: the open device, running it until something holds, reading its UART. */

export function requireDevice(ctx: ScenarioContext, kind: string): DeviceState {
  if (!ctx.device) throw new ScenarioError('failed', `${kind} needs an open device: flash one first with device-flash`);
  return ctx.device;
}

/** Runs the open device until `until()` holds, it stops, or `timeoutMs` passes on the clock of `kind`. */
export async function runDevice(ctx: ScenarioContext, state: DeviceState, options: { kind: ClockKind; timeoutMs: number; until: () => boolean }): Promise<void> {
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

/** `the firmware exited with code 0`, `the firmware crashed: ...`, or '' while it runs. */
export function stoppedText(state: DeviceState): string {
  const s = state.stopped;
  if (!s) return '';
  return s.reason === 'exited' ? `the firmware exited with code ${s.exitCode}` : s.reason === 'crashed' ? `the firmware crashed: ${s.message}` : '';
}

/** Where `text` (or `regex`) first matches in the UART output earlier waits left unconsumed. */
export function findText(state: DeviceState, body: { text?: string | undefined; regex?: string | undefined }): { index: number; end: number } | undefined {
  const rest = state.uartText.slice(state.consumed);
  if (body.text !== undefined) {
    const i = rest.indexOf(body.text);
    return i < 0 ? undefined : { index: state.consumed + i, end: state.consumed + i + body.text.length };
  }
  const m = new RegExp(body.regex as string).exec(rest);
  return m ? { index: state.consumed + m.index, end: state.consumed + m.index + m[0].length } : undefined;
}
