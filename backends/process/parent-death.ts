import { spawnSync } from 'node:child_process';
import { findExecutable } from './find-executable.js';

/**
 * Makes the kernel kill a spawned tool when the process that spawned it dies, even by SIGKILL
 * (which no exit handler sees): the tool is started through util-linux `setpriv --pdeathsig KILL --`,
 * which sets PR_SET_PDEATHSIG on itself and then execs the tool in place (same pid; the setting
 * survives exec of a non-setuid program). util-linux is Essential on Debian, so setpriv (2.33+
 * has --pdeathsig; Debian 12 ships 2.38) is there wherever Debian is.
 *
 * The signal follows the THREAD that forked the child, not the process: Node's child_process
 * forks from the JavaScript thread that calls spawn, the main thread for the server, which lives
 * as long as the process. A tool spawned from a worker thread would die with that worker.
 *
 * Off Linux, or without a working setpriv, tools are spawned as before: execa's cleanup still
 * kills them on an orderly exit, and the server reaps what a crash left (docs/decisions/0223).
 */
export interface Launch {
  file: string;
  args: readonly string[];
}

let setprivPath: string | null | undefined;

/** The setpriv that can set a parent-death signal here, or undefined; probed once per process. */
export function parentDeathLauncher(): string | undefined {
  if (setprivPath === undefined) setprivPath = probeSetpriv() ?? null;
  return setprivPath ?? undefined;
}

function probeSetpriv(): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const setpriv = findExecutable('setpriv');
  if (!setpriv) return undefined;
  // Run it once for real: an old util-linux without --pdeathsig, or a sandbox refusing prctl, fails here.
  // It execs itself (`--version`) so the probe needs no other program.
  const probe = spawnSync(setpriv, ['--pdeathsig', 'KILL', '--', setpriv, '--version'], { stdio: 'ignore', timeout: 10_000 });
  return probe.status === 0 ? setpriv : undefined;
}

/**
 * How to spawn `file args` so that it dies with this process. A tool that cannot be found is
 * spawned as is, so its ENOENT/EACCES reaches the caller as a spawn error, as before.
 */
export function dieWithParent(file: string, args: readonly string[], searchPath: string | undefined): Launch {
  const setpriv = parentDeathLauncher();
  const resolved = setpriv ? findExecutable(file, searchPath) : undefined;
  if (!setpriv || !resolved) return { file, args };
  return { file: setpriv, args: ['--pdeathsig', 'KILL', '--', resolved, ...args] };
}
