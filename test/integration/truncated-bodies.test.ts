import { createClock } from '@sinonjs/fake-timers';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { memoryLogger } from '../../server/http/logger.js';
import { call, registerNode, type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';
import { crashReproductions } from '../fuzz/crash-reproductions.js';
import { rawExchange } from '../fuzz/raw-http.js';

/**
 * Issue 9: a multipart body ending inside a file part ended the whole process (its file stream's
 * 'error' had no listener). In process, against both services: each such body is a JSON 400
 * (`There was an error parsing the body: ...`), nothing is stored, and the service keeps serving.
 * test/fuzz/serve-survives.test.ts sends the same requests to `hilbench serve` in a child process.
 */
const fake = createClock(TEST_START_MS);
const clock = clockFromFakeTimers(fake);
const relayData = tempDataDir('relay-truncated-');
let bench: BenchTestApp;
let relay: RunningRelay;
let benchToken = '';
let relayAuth = '';

beforeAll(async () => {
  bench = await startBenchTestApp({ fake });
  benchToken = (await bench.register('truncated')).token;
  relay = await startRelayServer({ clock, dataDir: relayData.dir, logger: memoryLogger() });
  relayAuth = (await registerNode(relay, clock)).auth;
});
afterAll(async () => {
  await bench?.close();
  await relay?.close();
  relayData.remove();
});

describe('bodies that end early', () => {
  it.each(crashReproductions({ benchToken: 'set in beforeAll', relayAuth: 'set in beforeAll' }).map((r, k) => [r.name, k]))('%s', async (_name, k) => {
    const repro = crashReproductions({ benchToken, relayAuth })[k as number]!;
    const exchange = await rawExchange(repro.service === 'bench' ? bench.url : relay.url, repro.request);
    if (repro.expected) {
      expect(exchange.responses).toHaveLength(1);
      const [answer] = exchange.responses;
      expect(answer!.headers['content-type']).toMatch(/^application\/json/);
      expect({ status: answer!.status, body: JSON.parse(answer!.body.toString()) as unknown }).toEqual({ status: repro.expected.status, body: { detail: repro.expected.detail } });
    }
    expect((await bench.request('/api/v1/health')).status).toBe(200);
    expect((await call(relay.baseUrl, 'GET', '/health')).status).toBe(200);
  });

  it('leaves no firmware blob and no relay file (or temp file) behind', () => {
    expect(readdirSync(join(bench.dataDir, 'firmware')).filter((f) => !f.startsWith('.'))).toEqual([]);
    expect(readdirSync(join(relayData.dir, 'files'))).toEqual([]);
  });
});
