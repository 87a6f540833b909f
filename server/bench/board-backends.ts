import type { Board, BackendName } from '../../boards/board-schema.js';
import type { Backend } from '../../backends/backend.js';
import { type BoardHealthControl, boardHealthControlOf } from './board-health-control.js';

export { type BackendChoice, type ResolvedBoard, resolveBoardBackend, resolveBoardBackends } from '../../harness/board-resolution.js';
import type { BackendChoice } from '../../harness/board-resolution.js';

/**
 * The backend that keeps `board`'s health (quarantine), if any: the chosen backend, or with
 * `auto` the first configured backend listed for the board that implements `BoardHealthControl`.
 * Independent of availability: a quarantined board is exactly one its backend reports unavailable.
 */
export function healthBackendOf(
  board: Board,
  backends: Partial<Record<BackendName, Backend>>,
  choice: BackendChoice,
): { name: BackendName; control: Backend & BoardHealthControl } | undefined {
  const names = choice === 'auto' ? (Object.keys(board.backends) as BackendName[]) : [choice];
  for (const name of names) {
    const backend = backends[name];
    const control = backend ? boardHealthControlOf(backend) : undefined;
    if (control) return { name, control };
  }
  return undefined;
}
