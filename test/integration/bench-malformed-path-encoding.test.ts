import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer } from './bench-job-requests.js';

/** A path with a malformed percent-encoding is the client's mistake: 404, nothing logged (issue 2). */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

describe('a malformed percent-encoding in a path is the client\'s mistake', () => {
  it.each(['/api/v1/jobs/%ZZ', '/api/v1/sessions/%E0%A4%A/heartbeat'])('%s answers 404 Not Found and logs nothing', async (p) => {
    const { token } = await app.register();
    const method = p.endsWith('heartbeat') ? 'POST' : 'GET';
    const res = await app.request(p, { method, headers: bearer(token) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
    expect(app.logger.lines.filter((l) => l.startsWith('error:'))).toEqual([]);
  });
});
