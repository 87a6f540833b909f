/**
 * Why the simulator refused an image or could not start. `bad-image`: the firmware cannot run
 * on this chip as given (wrong place in memory, needs a bootrom the bench does not have).
 * `unavailable`: the host is missing something the simulator needs (an unreadable bootrom file).
 * The sim backend turns these into `BackendError`s of the same kind.
 */
export class SimError extends Error {
  override readonly name = 'SimError';
  constructor(
    readonly kind: 'bad-image' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
