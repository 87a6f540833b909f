import { type Backend, type BoardHealthControl, keepsBoardHealth } from '../../backends/backend.js';

// The capability is typed on `Backend` (backends/backend.ts); the server names it from there.
export type { BoardHealthControl, HealthCheckOutcome } from '../../backends/backend.js';

/** `backend` as a `BoardHealthControl` when it keeps board health (`health` and `release`); undefined otherwise. */
export function boardHealthControlOf(backend: Backend): (Backend & BoardHealthControl) | undefined {
  return keepsBoardHealth(backend) ? backend : undefined;
}
