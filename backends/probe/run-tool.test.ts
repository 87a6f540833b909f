import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { formatCommand, outputTail, runTool } from './run-tool.js';

const node = process.execPath;

/** Resolves once `text` has appeared in the tool's output (the child is ready). */
function outputWatcher() {
  let seen = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  return {
    onOutput: (text: string) => {
      seen += text;
      for (const w of waiters.filter((w) => seen.includes(w.text))) w.resolve();
    },
    waitFor: (text: string) => new Promise<void>((resolve) => (seen.includes(text) ? resolve() : waiters.push({ text, resolve }))),
  };
}

describe('runTool', () => {
  it('returns exit status and interleaved output', async () => {
    const result = await runTool(node, ['-e', 'console.log("out"); console.error("err"); process.exit(3)'], {
      clock: systemClock,
      timeoutMs: 30_000,
      killGraceMs: 1000,
    });
    expect(result).toMatchObject({ exitCode: 3, exitSignal: null, stopped: undefined });
    expect(result.output).toContain('out');
    expect(result.output).toContain('err');
  });

  it('reports a missing executable as exit 127 instead of throwing', async () => {
    const result = await runTool('/nonexistent/openocd', ['-v'], { clock: systemClock, timeoutMs: 30_000, killGraceMs: 1000 });
    expect(result.exitCode).toBe(127);
    expect(result.output).toMatch(/ENOENT/);
  });

  it('sends SIGTERM when the deadline passes on the injected clock', async () => {
    const fake = createClock();
    const watcher = outputWatcher();
    const running = runTool(node, ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'], {
      clock: clockFromFakeTimers(fake),
      timeoutMs: 5_000,
      killGraceMs: 2_000,
      onOutput: watcher.onOutput,
    });
    await watcher.waitFor('ready');
    fake.tick(5_000);
    const result = await running;
    expect(result).toMatchObject({ stopped: 'timeout', exitCode: null, exitSignal: 'SIGTERM' });
  });

  it('escalates to SIGKILL when the tool ignores SIGTERM', async () => {
    const fake = createClock();
    const watcher = outputWatcher();
    const running = runTool(node, ['-e', 'process.on("SIGTERM", () => console.log("ignored")); console.log("ready"); setInterval(() => {}, 1000)'], {
      clock: clockFromFakeTimers(fake),
      timeoutMs: 1_000,
      killGraceMs: 2_000,
      onOutput: watcher.onOutput,
    });
    await watcher.waitFor('ready');
    fake.tick(1_000);
    await watcher.waitFor('ignored');
    fake.tick(2_000);
    const result = await running;
    expect(result).toMatchObject({ stopped: 'timeout', exitSignal: 'SIGKILL' });
  });

  it('stops the tool when its signal aborts', async () => {
    const controller = new AbortController();
    const watcher = outputWatcher();
    const running = runTool(node, ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'], {
      clock: systemClock,
      timeoutMs: 60_000,
      killGraceMs: 1_000,
      signal: controller.signal,
      onOutput: watcher.onOutput,
    });
    await watcher.waitFor('ready');
    controller.abort();
    expect(await running).toMatchObject({ stopped: 'cancelled', exitSignal: 'SIGTERM' });
  });

  it('passes extra environment to the tool', async () => {
    const result = await runTool(node, ['-e', 'console.log(process.env.HILBENCH_X)'], {
      clock: systemClock,
      timeoutMs: 30_000,
      killGraceMs: 1000,
      env: { HILBENCH_X: 'from-options' },
    });
    expect(result.output.trim()).toBe('from-options');
  });
});

describe('outputTail and formatCommand', () => {
  it('keeps the last non-empty lines', () => {
    expect(outputTail('a\n\nb\r\nc\n', 2)).toBe('b\nc');
  });

  it('quotes arguments with spaces for messages', () => {
    expect(formatCommand('openocd', ['-f', 'interface/stlink.cfg', '-c', 'init; reset run; shutdown'])).toBe(
      'openocd -f interface/stlink.cfg -c "init; reset run; shutdown"',
    );
  });
});
