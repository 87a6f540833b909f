import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';

/**
 * Storage faults that reach the one error handler raw, past any store's guard (decisions 0516,
 * 0790): SQLite's busy or locked database and PostgreSQL's word that the connection failed are
 * 503 with `Retry-After`, as the PostgreSQL guard answers a lost database, nothing changed; a bare
 * 500 before. The bench's store is wrapped so that registering an agent throws each of them.
 */
let app: BenchTestApp;
beforeAll(async () => {
  app = await startBenchTestApp();
});
afterAll(() => app.close());

/** An error as the drivers throw it: better-sqlite3's `SqliteError` and pg's errors carry `code`. */
const driverError = (message: string, code?: string) => Object.assign(new Error(message), code === undefined ? {} : { code });

describe('a storage fault reaching the error handler raw', () => {
  it.each([
    ['SQLite busy', driverError('database is locked', 'SQLITE_BUSY'), /^the bench's database is busy/],
    ['SQLite busy (snapshot)', driverError('database is locked', 'SQLITE_BUSY_SNAPSHOT'), /^the bench's database is busy/],
    ['SQLite locked', driverError('database table is locked', 'SQLITE_LOCKED'), /^the bench's database is busy/],
    ['PostgreSQL shut down (57P01)', driverError('terminating connection due to administrator command', '57P01'), /^the bench's database is unavailable/],
    ['PostgreSQL connection failure (08006)', driverError('connection failure', '08006'), /^the bench's database is unavailable/],
    ['pg connection lost', driverError('Connection terminated unexpectedly'), /^the bench's database is unavailable/],
    ['wrapped as a cause', new Error('cannot register the agent', { cause: driverError('database is locked', 'SQLITE_BUSY') }), /^the bench's database is busy/],
  ])('%s: 503 with Retry-After, and nothing logged as a 500', async (_name, fault, detail) => {
    const store = app.server.service.store;
    const insertAgent = store.insertAgent.bind(store);
    store.insertAgent = () => Promise.reject(fault);
    try {
      const answer = await app.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'busy' }) });
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(await answer.json()).toEqual({ detail: expect.stringMatching(detail) });
    } finally {
      store.insertAgent = insertAgent;
    }
    expect(app.logger.lines.filter((line) => line.includes('failed with an unexpected error'))).toEqual([]);
    // The store answers again: so does the route.
    expect((await app.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'back' }) })).status).toBe(200);
  });

  it('a socket error alone is no database\'s word (a peer or a file could give it): still a 500', async () => {
    const store = app.server.service.store;
    const insertAgent = store.insertAgent.bind(store);
    store.insertAgent = () => Promise.reject(driverError('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED'));
    try {
      expect((await app.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'x' }) })).status).toBe(500);
    } finally {
      store.insertAgent = insertAgent;
    }
  });
});
