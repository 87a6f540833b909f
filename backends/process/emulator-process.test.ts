import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { EmulatorProcess, processExists } from './emulator-process.js';
import { parentDeathLauncher } from './parent-death.js';
import { isProcessAlive, processStartTicks } from './process-identity.js';

/**
 * Waits, bounded, until `pid` is gone or a zombie: a process signalled by the kernel needs a
 * moment to exit, and no event tells another process when it has.
 */
async function waitUntilDead(identity: { pid: number; startTicks: number }, boundMs = 10_000): Promise<boolean> {
  const stepMs = 20;
  for (let waitedMs = 0; waitedMs < boundMs && isProcessAlive(identity); waitedMs += stepMs) await new Promise((r) => setTimeout(r, stepMs));
  return !isProcessAlive(identity);
}

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

  it.runIf(process.platform === 'linux')('dies with the Node process that spawned it, even when that process is killed with SIGKILL', { timeout: 30_000 }, async () => {
    // Debian 12's util-linux setpriv sets the parent-death signal; without it this guarantee is gone.
    expect(parentDeathLauncher()).toMatch(/setpriv$/);
    const module = new URL('./emulator-process.ts', import.meta.url).href;
    const script = `
      import { EmulatorProcess } from ${JSON.stringify(module)};
      import { systemClock } from ${JSON.stringify(new URL('../../core/clock.ts', import.meta.url).href)};
      const p = new EmulatorProcess('sleep', ['600'], { clock: systemClock, killGraceMs: 1000 });
      console.log('child ' + p.pid);
      setInterval(() => {}, 60_000);`;
    const server = execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { reject: false });
    const pid = await new Promise<number>((resolve, reject) => {
      let seen = '';
      server.stdout?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const m = /child (\d+)/.exec(seen);
        if (m) resolve(Number(m[1]));
      });
      void server.then((r) => reject(new Error(`exited early: ${r.exitCode} ${r.stderr}`)));
    });
    const child = { pid, startTicks: processStartTicks(pid)! };
    expect(isProcessAlive(child)).toBe(true);
    server.kill('SIGKILL');
    await server;
    expect(await waitUntilDead(child), `sleep (pid ${pid}) outlived the process that spawned it`).toBe(true);
  });
});
