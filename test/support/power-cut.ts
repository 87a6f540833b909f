import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';

const DURABLE = '.durable';

/**
 * Builds `power-cut-shim.c` (beside this file) with the host's C compiler into `dir`: preloaded
 * into a process with `HILBENCH_POWER_CUT_DIR` set, it keeps what each sync made durable (see the
 * C file). Where no compiler runs, the reason; in CI (HILBENCH_REQUIRE_TOOLS=1) it throws instead.
 */
export function buildPowerCutShim(dir: string): { preload: string } | { notBuilt: string } {
  const preload = path.join(dir, 'power-cut-shim.so');
  const source = path.join(import.meta.dirname, 'power-cut-shim.c');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', preload, source, '-ldl', '-lpthread'], { stdio: 'pipe' });
  } catch (err) {
    const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    const reason = `building the power-cut shim needs a C compiler (cc; apt-get install -y gcc): ${why}`;
    if (process.env.HILBENCH_REQUIRE_TOOLS === '1') throw new Error(reason, { cause: err });
    return { notBuilt: reason };
  }
  return { preload };
}

/** The environment that preloads the shim into a child writing under `dataDir`. */
export function powerCutEnv(preload: string, dataDir: string): Record<string, string> {
  // The shim matches files by their resolved path (readlink of /proc/self/fd): a TMPDIR behind a symlink must match too.
  return { LD_PRELOAD: preload, HILBENCH_POWER_CUT_DIR: realpathSync(dataDir) };
}

/**
 * Copies into `intoDir` the files of `dataDir` as the power cut left them: each file there that was
 * synced, as its last sync made it; a file never synced, or deleted, is not there (see the C file).
 * Call it before anything opens the files of `dataDir` again. Returns the names copied.
 */
export function filesAfterPowerCut(dataDir: string, intoDir: string): string[] {
  const names = new Set(readdirSync(dataDir));
  const kept = [...names].filter((name) => name.endsWith(DURABLE) && names.has(name.slice(0, -DURABLE.length)));
  for (const name of kept) copyFileSync(path.join(dataDir, name), path.join(intoDir, name.slice(0, -DURABLE.length)));
  return kept.map((name) => name.slice(0, -DURABLE.length)).sort();
}
