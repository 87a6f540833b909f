import { availableParallelism } from 'node:os';
import { MAX_POOL_SIZE } from '../../wire/worker/worker-schemas.js';


/** Backends that emulate a board: nothing physical limits how many copies of it run. */
const EMULATING_BACKENDS: ReadonlySet<string> = new Set(['mock', 'sim', 'qemu', 'renode']);
/**
 * Backends whose engines run inside the worker's process and get the host's cores by default: the
 * simulators. The mock stands in for one board in tests and labs' smoke checks, so it stays one
 * unless sized (the lab tests expect a mock board held by one session to refuse the next).
 */
const IN_PROCESS_BACKENDS: ReadonlySet<string> = new Set(['sim']);

/** Pool sizes a worker was given: one for every emulated board, and per board. */
export interface PoolSizes {
  /** For every emulated board without its own size; default 1 (a library caller, a test). */
  all?: number;
  /** By board id. */
  byBoard?: Readonly<Record<string, number>>;
  /**
   * For boards on the simulators (sim) when neither of the above is given: the CLI's
   * default, the host's cores. QEMU and Renode instances are emulator processes an operator sizes
   * (`all` or `byBoard`); without either they stay one.
   */
  inProcessDefault?: number;
}

/** The default a worker host gets from `hilbench serve` and `hilbench worker`: its number of cores. */
export function hostPoolSize(): number {
  return Math.min(MAX_POOL_SIZE, availableParallelism());
}

/** The CLI's pool sizes: `--pool-size` values as given, else the host's cores for in-process engines. */
export function cliPoolSizes(values: readonly string[]): PoolSizes {
  const given = parsePoolSizeOptions(values);
  return given.all === undefined ? { ...given, inProcessDefault: hostPoolSize() } : given;
}

/** A pool size as given (CLI, options): an integer 1..MAX_POOL_SIZE, else an error naming `what` and the bound. */
export function checkPoolSize(size: number, what: string): number {
  if (!Number.isInteger(size) || size < 1 || size > MAX_POOL_SIZE) {
    throw new RangeError(`the pool size of ${what} must be a whole number from 1 to ${MAX_POOL_SIZE}, not ${size}`);
  }
  return size;
}

/** Every size in `sizes` checked (`checkPoolSize`); throws on the first bad one. */
export function checkPoolSizes(sizes: PoolSizes): PoolSizes {
  if (sizes.all !== undefined) checkPoolSize(sizes.all, 'every emulated board');
  if (sizes.inProcessDefault !== undefined) checkPoolSize(sizes.inProcessDefault, 'every simulated board');
  for (const [board, size] of Object.entries(sizes.byBoard ?? {})) checkPoolSize(size, `board ${board}`);
  return sizes;
}

/**
 * The instances of `board` a worker runs on `backendName`: its own size, else the worker's size for
 * emulated boards; a physical board (the probe) is always one (its bench-file entry).
 */
export function poolSizeOf(board: string, backendName: string, sizes: PoolSizes): number {
  if (!EMULATING_BACKENDS.has(backendName)) return 1;
  return sizes.byBoard?.[board] ?? sizes.all ?? (IN_PROCESS_BACKENDS.has(backendName) ? sizes.inProcessDefault : undefined) ?? 1;
}

/**
 * Parses `--pool-size` values: `N` (every emulated board) or `BOARD=N` (one board), each checked.
 * Throws a RangeError that names the value.
 */
export function parsePoolSizeOptions(values: readonly string[]): PoolSizes {
  const sizes: { all?: number; byBoard: Record<string, number> } = { byBoard: {} };
  for (const value of values) {
    const match = /^(?:([a-z0-9][a-z0-9-]*)=)?(\d+)$/.exec(value.trim());
    if (!match) throw new RangeError(`--pool-size ${JSON.stringify(value)}: expected N or BOARD=N, with N from 1 to ${MAX_POOL_SIZE}`);
    const size = checkPoolSize(Number(match[2]), match[1] === undefined ? 'every emulated board' : `board ${match[1]}`);
    if (match[1] === undefined) sizes.all = size;
    else sizes.byBoard[match[1]] = size;
  }
  return sizes;
}
