import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, flash, picoElf } from './bench-job-requests.js';

/** Errors for near misses name the fix (issue 11): a board id close to a real one, a flash beside one's own session. */

let app: BenchTestApp;
afterEach(async () => {
  await app.close();
});

describe('near-miss errors', () => {
  it('suggests the board a mistyped id is close to', async () => {
    app = await startBenchTestApp();
    const { token } = await app.register('alice');
    const res = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'netduino-plus2' }) });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^board "netduino-plus2" not found; did you mean "netduinoplus2"\?; boards here: /);
    const stranger = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'esp32-devkit' }) });
    expect(((await stranger.json()) as { detail: string }).detail).toMatch(/^board "esp32-devkit" not found; boards here: /);
  });

  it('names the caller’s own session when a flash without one finds the board leased by it', async () => {
    app = await startBenchTestApp();
    const { token } = await app.register('alice');
    const opened = (await (await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico' }) })).json()) as {
      session_id: string;
    };
    const res = await flash(app, token, { board: 'pico' }, picoElf());
    expect(res.status).toBe(409);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toContain(`in session ${opened.session_id} `);
    expect(detail).toContain(`send session=${opened.session_id} with the flash job`);
  });
});
