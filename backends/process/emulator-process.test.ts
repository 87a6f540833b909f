import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { EmulatorProcess, processExists } from './emulator-process.js';

describe('EmulatorProcess', () => {
  it('collects lines from both streams and reports the exit status', async () => {
    const p = new EmulatorProcess('sh', ['-c', 'echo one; echo two >&2; printf three; exit 7'], { clock: systemClock, killGraceMs: 1000 });
    const lines: string[] = [];
    p.onLine((line) => lines.push(line));
    await expect(p.exited).resolves.toEqual({ exitCode: 7, signal: undefined, stoppedByUs: false });
    expect(lines.sort()).toEqual(['one', 'three', 'two']);
    expect(p.outputTail()).toContain('three');
  });

  it('escalates to SIGKILL when SIGTERM is ignored', async () => {
    const p = new EmulatorProcess('sh', ['-c', "trap '' TERM; echo ready; while :; do sleep 0.05; done"], { clock: systemClock, killGraceMs: 300 });
    await new Promise<void>((resolve) => p.onLine((line) => line === 'ready' && resolve()));
    const exit = await p.stop();
    expect(exit).toMatchObject({ signal: 'SIGKILL', stoppedByUs: true });
    expect(processExists(p.pid!)).toBe(false);
  });

  it('stops a cooperative process with SIGTERM and is safe to stop twice', async () => {
    const p = new EmulatorProcess('sleep', ['30'], { clock: systemClock, killGraceMs: 5000 });
    const exit = await p.stop();
    expect(exit).toMatchObject({ signal: 'SIGTERM', stoppedByUs: true });
    await expect(p.stop()).resolves.toBe(exit);
  });

  it('reports the exit even while a grandchild keeps its output pipes open', async () => {
    const p = new EmulatorProcess('sh', ['-c', 'sleep 2 & echo started; exit 5'], { clock: systemClock, killGraceMs: 1000 });
    await expect(p.exited).resolves.toMatchObject({ exitCode: 5 });
    expect(p.outputTail()).toContain('started');
  });

  it('reports a program that cannot be started as an exit without status, with the reason in the tail', async () => {
    const p = new EmulatorProcess('/nonexistent/emulator', [], { clock: systemClock, killGraceMs: 1000 });
    await expect(p.exited).resolves.toEqual({ exitCode: undefined, signal: undefined, stoppedByUs: false });
    expect(p.outputTail()).toMatch(/could not run \/nonexistent\/emulator: .*ENOENT/);
  });
});
