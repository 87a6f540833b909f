import type { Clock } from '../../core/clock.js';

/**
 * The Renode backend: boards with `backends.renode` run in Renode, driven through its console
 * monitor (docs/backends/renode.md).
 *
 * - `flash` starts Renode, creates the machine, loads the platform and the ELF, creates a UART
 *   server socket terminal, connects the board's UART to it and connects to that socket, all
 *   before the emulation starts: the core is "held in reset" and no byte can be missed.
 * - the first `run` sends `start`; UART timestamps count from then, in host time
 *   (`timeBase: 'wall'`: Renode's virtual time is not visible per byte through the socket).
 * - `reset` pauses, resets the machine and loads the ELF again (Machine.Reset zeroes memory);
 *   the next `run` starts it again. The Renode process and the socket stay.
 * - a `CPU abort` log line is a crash. It travels on Renode's console while the UART bytes travel
 *   through the socket, so the abort can be read before the firmware's last bytes: the run goes
 *   on reading the socket until it has been quiet for `drainQuietMs`, then ends `crashed`; what
 *   still arrives after that is counted in `droppedUartBytes`. Renode has no firmware-decided
 *   exit, so `exited` never comes from this backend.
 */
export interface RenodeBackendOptions {
  /** Renode executable; default `renode` on PATH (bin/ fills it from --renode or HILBENCH_RENODE). */
  renodePath?: string;
  /** Environment whose PATH finds Renode, passed to it (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Host clock of every timeout (injected: the system clock in production). */
  clock: Clock;
  /** Bound on Renode's first prompt, host ms. Renode (.NET) takes seconds to start; default 60 s. */
  startTimeoutMs?: number;
  /** Bound on each monitor command's prompt, host ms; default 30 s. */
  commandTimeoutMs?: number;
  /** SIGTERM grace before SIGKILL, host ms; default 3 s. */
  killGraceMs?: number;
  /** How long `quit` may take before SIGTERM, host ms; default 3 s. */
  quitTimeoutMs?: number;
  /**
   * After a `CPU abort` line, how long the UART socket must stay quiet before the run ends, host
   * ms (the abort can be read before the firmware's last bytes); default `RENODE_DRAIN_QUIET_MS`, 200 ms.
   */
  drainQuietMs?: number;
  /** Bound on that whole drain, host ms; default `RENODE_DRAIN_TIMEOUT_MS`, 2 s. Later bytes are counted as dropped. */
  drainTimeoutMs?: number;
  /** Picks the TCP port for the UART terminal (default: a free loopback port chosen by the OS). */
  pickPort?: () => Promise<number>;
  /** Parent of the per-device scratch dir `hbr-<pid>-<start>-XXXXXX`; default the OS temp dir. */
  tempDir?: string;
}
