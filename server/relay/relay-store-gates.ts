import type { RequestHandler } from 'express';
import { answersWaitFor } from '../http/answers-wait-for.js';
import type { Logger } from '../http/logger.js';
import type { RelayStore } from './relay-store.js';

/**
 * What relay requests wait for from their store. `durable`, before anything else: an answer waits
 * until what it depends on is on disk (decision 0480; a failed sync is logged once and every answer
 * is a 503 from then on). `fresh`, before the API's routes and after its rate limits (a client over
 * its limit costs no database round trip): on replicas on PostgreSQL, the caches another replica's
 * commit made stale are dropped before anything reads them (decision 0441; on SQLite a no-op).
 * The site's pages read no cache, so they do not wait for it.
 */
export function relayStoreGates(store: RelayStore, logger: Logger): { durable: RequestHandler; fresh: RequestHandler } {
  let syncFailureLogged = false;
  const durable = answersWaitFor({
    ready: () => store.whenDurable(),
    failure: () => store.syncFailure,
    onFailure: (error) => {
      if (!syncFailureLogged) logger.error('relay: committed data could not be synced to disk; every answer is now a 503 until the relay restarts', error);
      syncFailureLogged = true;
    },
  });
  const fresh: RequestHandler = (_req, _res, next) => {
    const refreshed = store.refresh();
    if (refreshed === null) next();
    else refreshed.then(() => next(), next);
  };
  return { durable, fresh };
}
