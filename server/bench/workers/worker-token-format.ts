/**
 * The shape of a bench worker token, in a module of its own so that the CLI (`hilbench worker`)
 * can check a token file without loading the server.
 */

/** Worker tokens start `hbw_`, agent tokens `hb_`: neither ever passes for the other. */
export const WORKER_TOKEN_PREFIX = 'hbw_';

/** A worker token as `POST /admin/workers` makes them: the prefix, then base64url. */
export function looksLikeWorkerToken(text: string): boolean {
  return text.startsWith(WORKER_TOKEN_PREFIX) && /^[A-Za-z0-9_-]+$/.test(text.slice(WORKER_TOKEN_PREFIX.length));
}
