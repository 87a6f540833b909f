import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer } from './bench-job-requests.js';

/** Waiting for a busy board instead of polling 409s (issue 11): a FIFO queue per board, bounded. */

let app: BenchTestApp;
afterEach(async () => {
  await app.close();
});

const open = (token: string, fields: Record<string, string>) =>
  app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', ...fields }) });

describe('POST /api/v1/sessions with wait_seconds', () => {
  it('grants the lease to waiters first come first served as the holder lets go', async () => {
    app = await startBenchTestApp();
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    const held = (await (await open(alice.token, {})).json()) as { session_id: string };
    const bobWaits = open(bob.token, { wait_seconds: '60' });
    await app.fake.tickAsync(100);
    const carolWaits = open(carol.token, { wait_seconds: '60' });
    await app.fake.tickAsync(100);
    expect((await app.request(`/api/v1/sessions/${held.session_id}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    const bobs = await bobWaits;
    expect(bobs.status).toBe(200);
    const bobSession = (await bobs.json()) as { session_id: string; board: string };
    expect(bobSession.board).toBe('pico');
    // Carol is next: she gets the board when bob ends his session.
    await app.fake.tickAsync(1_000);
    expect((await app.request(`/api/v1/sessions/${bobSession.session_id}/end`, { method: 'POST', headers: bearer(bob.token) })).status).toBe(200);
    expect((await carolWaits).status).toBe(200);
  });

  it('answers 409 with the queue position and the holder when the wait runs out; 422 beyond 300 s', async () => {
    app = await startBenchTestApp();
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    expect((await open(alice.token, { idle_seconds: '3600' })).status).toBe(200);
    const bobWaits = open(bob.token, { wait_seconds: '30' });
    await app.fake.tickAsync(100);
    const carolWaits = open(carol.token, { wait_seconds: '5' });
    for (let i = 0; i < 6; i++) await app.fake.tickAsync(1_000);
    const carols = await carolWaits;
    expect(carols.status).toBe(409);
    expect(((await carols.json()) as { detail: string }).detail).toMatch(
      /^board pico is leased by agent "alice" until .* unless renewed \(retry_after_seconds=\d+\); you were number 2 in the queue for pico when your wait of 5 s ran out$/,
    );
    for (let i = 0; i < 26; i++) await app.fake.tickAsync(1_000);
    expect(((await (await bobWaits).json()) as { detail: string }).detail).toMatch(/you were number 1 in the queue for pico/);
    expect((await open(bob.token, { wait_seconds: '301' })).status).toBe(422);
  });
});
