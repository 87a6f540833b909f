/**
 * Stable failure kinds: what a backend fails with (`BackendError`), carried by a worker's outcome
 * (wire/worker/worker-schemas.ts) into a failed job's `failure.kind`. `bad-image` and `firmware-fault`-style outcomes are the user's; the
 * others are infrastructure failures that count towards quarantining a board.
 */
export const jobFailureKinds = [
  'bad-image',
  'unavailable',
  'flash-failed',
  'probe-not-found',
  'reset-failed',
  'serial-lost',
  'timeout',
  'cancelled',
  'internal',
] as const;
export type JobFailureKind = (typeof jobFailureKinds)[number];
