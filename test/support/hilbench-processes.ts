import { execa, type ResultPromise } from 'execa';
import { hilbenchCli } from './compiled-cli.js';

/**
 * `hilbench` processes started by one test file, killed at its end (`killAll` in `afterAll`):
 * each resolves once its output matches `ready`, or rejects with what it printed if it exits first.
 */
export class HilbenchProcesses {
  private readonly running = new Set<ResultPromise>();

  /**
   * `env`: variables added to this process's environment for the child; `unsetEnv`: variables of
   * this process the child must not see (a default under test); `readyWithinMs` bounds the wait
   * (default 60 000).
   */
  async start(
    args: string[],
    ready: RegExp,
    options: { env?: Record<string, string>; unsetEnv?: string[]; readyWithinMs?: number } = {},
  ): Promise<{ child: ResultPromise; match: RegExpExecArray }> {
    const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
    for (const name of options.unsetEnv ?? []) delete env[name];
    const child = execa('node', [hilbenchCli, ...args], { reject: false, all: true, env, extendEnv: false });
    this.running.add(child);
    const readyWithinMs = options.readyWithinMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const match = await new Promise<RegExpExecArray>((resolve, reject) => {
      let seen = '';
      child.all?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const m = ready.exec(seen);
        if (m) resolve(m);
      });
      void child.then((r) => reject(new Error(`hilbench ${args[0]} exited early (${r.exitCode}): ${r.all}`)));
      timer = setTimeout(() => reject(new Error(`hilbench ${args[0]} printed no ${ready} within ${readyWithinMs} ms; it printed: ${seen.slice(-2000)}`)), readyWithinMs);
    }).finally(() => clearTimeout(timer));
    return { child, match };
  }

  async killAll(): Promise<void> {
    for (const p of this.running) p.kill('SIGKILL');
    await Promise.allSettled(this.running);
  }
}

/**
 * Waits, bounded, until `check` holds: another process's jobs and a killed process's exit give
 * this one no event to wait on. Fails naming what it waited for.
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, boundMs = 60_000): Promise<void> {
  const stepMs = 100;
  // The bound is time, not steps: on a loaded machine a check (an HTTP round trip) can take longer than a step.
  const startedMs = performance.now();
  while (performance.now() - startedMs < boundMs) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  if (await check()) return;
  throw new Error(`waited ${boundMs} ms for ${what}`);
}
