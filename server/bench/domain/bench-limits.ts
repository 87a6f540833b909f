import { FORM_DEFAULTS } from '../../../wire/bench/bench-schemas.js';

/** The bench service's configurable limits (docs/bench-api.md, "Limits"). */
export interface BenchLimits {
  /** Largest firmware upload, bytes. A larger one is refused with 413 while streaming. */
  maxFirmwareBytes: number;
  /** Largest body of the urlencoded/multipart forms without files, bytes. */
  maxFormBodyBytes: number;
  /** Bounds of `idle_seconds`, seconds. */
  minIdleSeconds: number;
  maxIdleSeconds: number;
  /** Upper bound of `uart_seconds` (the lower bound is "greater than 0"), seconds. */
  maxUartSeconds: number;
  /** UART bytes kept per job; more is counted in `dropped_bytes`. */
  maxUartBytesPerJob: number;
  /** UART chunks kept with timestamps per job; more is counted in `chunks_omitted`. */
  maxUartChunksPerJob: number;
  /** Jobs waiting per board; one more is refused with 429. */
  maxQueuedJobsPerBoard: number;
  /**
   * Longest a job waits in the queue for a worker to start it, seconds: then it fails as
   * `unavailable` (its board has had no worker, or its queue did not move), so nothing waits for ever.
   */
  maxQueueWaitSeconds: number;
  /** Longest agent label, characters. */
  maxLabelLength: number;
  /**
   * Requests one agent may hold open at once on one server process (job `?wait=`, UART streams,
   * serial input waiting to be written, session queues); one more is refused with 429 and
   * `Retry-After` (decision 0471).
   */
  maxLongPollsPerAgent: number;
  /**
   * `POST /api/v1/agents/register` per client address per minute (a burst of this many, then one
   * every 60/n s); one more is refused with 429 and `Retry-After`. docs/bench-api.md, "Rate limits".
   */
  agentRegistrationsPerMinute: number;
  /** `POST /api/v1/waitlist` per client address per minute, as above. */
  waitlistJoinsPerMinute: number;
}

export const defaultBenchLimits: BenchLimits = {
  maxFirmwareBytes: 4 * 1024 * 1024,
  maxFormBodyBytes: 64 * 1024,
  minIdleSeconds: 10,
  maxIdleSeconds: 3600,
  maxUartSeconds: 30,
  maxUartBytesPerJob: 64 * 1024,
  maxUartChunksPerJob: 1024,
  maxQueuedJobsPerBoard: 8,
  // Far above a full queue on a healthy board (8 jobs of at most 30 s of UART, on a slow host).
  maxQueueWaitSeconds: 900,
  maxLabelLength: 64,
  // An agent follows each job it runs with one long poll (a ?wait= or its stream), and a few boards
  // at once; the slack covers polls whose client left before the server noticed (decision 0471).
  maxLongPollsPerAgent: 16,
  // A person or a CI job registers a handful of agents; a script minting tokens does not get far.
  agentRegistrationsPerMinute: 10,
  waitlistJoinsPerMinute: 5,
};

/** Limits counted in whole units (bytes, chunks, jobs, characters, requests). */
const INTEGER_LIMITS: ReadonlySet<keyof BenchLimits> = new Set([
  'maxFirmwareBytes',
  'maxFormBodyBytes',
  'maxUartBytesPerJob',
  'maxUartChunksPerJob',
  'maxQueuedJobsPerBoard',
  'maxLabelLength',
  'maxLongPollsPerAgent',
  'agentRegistrationsPerMinute',
  'waitlistJoinsPerMinute',
]);

/** The command-line flag that sets `key` (`bin/hilbench.ts` derives it the same way). */
export const limitFlag = (key: keyof BenchLimits) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * Checks limits against each other and the spec's defaults, so a server never starts with a
 * form that refuses its own defaults: every limit a positive finite number (whole where counted),
 * `minIdleSeconds <= maxIdleSeconds`, and the defaults within bounds (`10 <= 90 <= 3600` idle
 * seconds, `0.8 <= maxUartSeconds`, `"agent"` within `maxLabelLength`). Throws an `Error` naming
 * the flags and the values; returns the limits unchanged.
 */
export function validateBenchLimits(limits: BenchLimits): BenchLimits {
  const problems: string[] = [];
  for (const key of Object.keys(defaultBenchLimits) as Array<keyof BenchLimits>) {
    const value: unknown = limits[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      problems.push(`${limitFlag(key)} must be a positive number, got ${String(value)}`);
    } else if (INTEGER_LIMITS.has(key) && !Number.isInteger(value)) {
      problems.push(`${limitFlag(key)} must be a whole number, got ${value}`);
    }
  }
  if (problems.length === 0) {
    const idleDefault = Number(FORM_DEFAULTS.idleSeconds);
    if (limits.minIdleSeconds > limits.maxIdleSeconds) {
      problems.push(`${limitFlag('minIdleSeconds')} (${limits.minIdleSeconds}) is above ${limitFlag('maxIdleSeconds')} (${limits.maxIdleSeconds})`);
    } else if (idleDefault < limits.minIdleSeconds || idleDefault > limits.maxIdleSeconds) {
      problems.push(
        `the default idle_seconds (${idleDefault}) must lie within ${limitFlag('minIdleSeconds')} (${limits.minIdleSeconds}) and ${limitFlag('maxIdleSeconds')} (${limits.maxIdleSeconds})`,
      );
    }
    const uartDefault = Number(FORM_DEFAULTS.uartSeconds);
    if (uartDefault > limits.maxUartSeconds) {
      problems.push(`${limitFlag('maxUartSeconds')} (${limits.maxUartSeconds}) is below the default uart_seconds (${uartDefault})`);
    }
    if (FORM_DEFAULTS.label.length > limits.maxLabelLength) {
      problems.push(`${limitFlag('maxLabelLength')} (${limits.maxLabelLength}) is shorter than the default label "${FORM_DEFAULTS.label}" (${FORM_DEFAULTS.label.length} characters)`);
    }
  }
  if (problems.length > 0) throw new Error(`invalid bench limits: ${problems.join('; ')}`);
  return limits;
}
