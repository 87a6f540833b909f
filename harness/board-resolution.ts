import type { Board, BackendName } from '../boards/board-schema.js';
import { type Backend, type BoardHealthControl, keepsBoardHealth } from '../backends/backend.js';

/** `--backend`: `mock` (the default), `auto`, or one backend for every board. */
export type BackendChoice = 'auto' | BackendName;

/** A board with the backend that runs it here, or the reason it cannot run. */
export interface ResolvedBoard {
  board: Board;
  /** Null when the board is offline. */
  backend: Backend | null;
  /** The backend's name, or the one that was chosen but is not usable ("none" for auto with nothing usable). */
  backendName: string;
  offlineReason: string | null;
}

/**
 * Decides which backend runs each board. `auto` takes the first backend listed under the
 * board's `backends` keys that is configured and reports itself available; the mock is never
 * substituted for a real backend (a user asking for hardware must not get a fake answer), so
 * with nothing usable the board is offline with every reason.
 */
export async function resolveBoardBackends(
  boards: readonly Board[],
  backends: Partial<Record<BackendName, Backend>>,
  choice: BackendChoice,
): Promise<ResolvedBoard[]> {
  return Promise.all(boards.map((board) => resolveBoardBackend(board, backends, choice)));
}

/**
 * Resolves one board as `resolveBoardBackends` does. Never rejects: a backend whose availability
 * check throws (synchronously or not) makes the board offline with the error as the reason.
 */
export async function resolveBoardBackend(
  board: Board,
  backends: Partial<Record<BackendName, Backend>>,
  choice: BackendChoice,
): Promise<ResolvedBoard> {
  if (choice !== 'auto') return tryBackend(board, choice, backends[choice]);
  const listed = Object.keys(board.backends) as BackendName[];
  if (listed.length === 0) {
    return { board, backend: null, backendName: 'none', offlineReason: `board ${board.id} lists no backends in its board file` };
  }
  const reasons: string[] = [];
  for (const name of listed) {
    const resolved = await tryBackend(board, name, backends[name]);
    if (resolved.backend) return resolved;
    reasons.push(`${name}: ${resolved.offlineReason}`);
  }
  return { board, backend: null, backendName: 'none', offlineReason: `no backend can run ${board.id} here (${reasons.join('; ')})` };
}

/**
 * What a missing backend needs. Said without naming a server: `hilbench boards` and a worker
 * resolve boards too, and the reason read "not configured on this server" where none was involved.
 */
const NOT_CONFIGURED_HINT: Partial<Record<BackendName, string>> = { probe: ' (it needs a bench file of the real boards: --bench-file)' };

async function tryBackend(board: Board, name: BackendName, backend: Backend | undefined): Promise<ResolvedBoard> {
  if (!backend) return { board, backend: null, backendName: name, offlineReason: `the ${name} backend is not configured here${NOT_CONFIGURED_HINT[name] ?? ''}` };
  try {
    const availability = await backend.availability(board);
    if (availability.available) return { board, backend, backendName: name, offlineReason: null };
    return { board, backend: null, backendName: name, offlineReason: availability.reason };
  } catch (err) {
    return { board, backend: null, backendName: name, offlineReason: `the ${name} backend failed its availability check: ${err instanceof Error ? err.message : String(err)}` };
  }
}

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
    if (backend && keepsBoardHealth(backend)) return { name, control: backend };
  }
  return undefined;
}
