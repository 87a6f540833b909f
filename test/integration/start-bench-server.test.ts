import { createClock } from '@sinonjs/fake-timers';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type RunningBenchServer, startBenchServer } from '../../server/bench/start-bench-server.js';

/**
 * Started on port 0 with no public address (what `hilbench serve --port 0` does), the bench
 * advertises the port it got: it advertised `http://127.0.0.1:0` in every discovery document.
 */
const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-start-'));
let server: RunningBenchServer;

beforeAll(async () => {
  const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 29)));
  server = await startBenchServer({ port: 0, dataDir, boards: loadBoardCatalog(), clock, logger: memoryLogger(), backends: { mock: new MockBackend() } });
});
afterAll(async () => {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('startBenchServer without a publicBaseUrl', () => {
  it('publishes the address it is bound to, the port picked for 0 included', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
    const openApi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { servers: { url: string }[] };
    expect(openApi.servers).toEqual([{ url: server.url }]);
    const plugin = (await (await fetch(`${server.url}/.well-known/ai-plugin.json`)).json()) as { api: { url: string } };
    expect(plugin.api.url).toBe(`${server.url}/openapi.json`);
    const llms = await (await fetch(`${server.url}/llms.txt`)).text();
    expect(llms).toContain(`${server.url}/api/v1/agents/register`);
    expect(llms).not.toContain('127.0.0.1:0');
  });
});
