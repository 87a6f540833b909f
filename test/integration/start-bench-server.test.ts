import { createClock } from '@sinonjs/fake-timers';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { createBenchService } from '../../server/bench/bench-service.js';
import { type RunningBenchServer, startBenchServer, type StartBenchServerOptions } from '../../server/bench/start-bench-server.js';

/**
 * Started on port 0 with no public address (what `hilbench serve --port 0` does), the bench
 * advertises the port it got: it advertised `http://127.0.0.1:0` in every discovery document.
 */
const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-start-'));
let server: RunningBenchServer;

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 29)));
const options = (dir: string): StartBenchServerOptions => ({ port: 0, dataDir: dir, boards: loadBoardCatalog(), clock, logger: memoryLogger(), backends: { mock: new MockBackend() } });

beforeAll(async () => {
  server = await startBenchServer(options(dataDir));
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

describe('startBenchServer while it starts and as it closes', () => {
  it('answers 503 with Retry-After while the service is being created (the window between listen and the app), then serves', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-starting-'));
    let duringStart: { status: number; retryAfter: string | null; body: unknown } | undefined;
    // The creation step, awaited: a request sent while it runs was left unanswered for ever.
    const started = await startBenchServer(options(dir), {
      createService: async (config) => {
        const answer = await fetch(`${config.publicBaseUrl}/api/v1/health`);
        duringStart = { status: answer.status, retryAfter: answer.headers.get('retry-after'), body: await answer.json() };
        return createBenchService(config);
      },
    });
    try {
      expect(duringStart).toEqual({ status: 503, retryAfter: '1', body: { detail: 'the bench is starting' } });
      expect((await fetch(`${started.url}/api/v1/health`)).status).toBe(200);
    } finally {
      await started.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('closes while a request whose Upgrade it ignores (h2c) is still being served', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-closing-'));
    let upgradeTaken: () => void = () => undefined;
    const serving = new Promise<void>((resolve) => (upgradeTaken = resolve));
    // The service's upgrade listener, wrapped to say when it has taken the request.
    const started = await startBenchServer(options(dir), {
      createService: async (config) => {
        const service = await createBenchService(config);
        const upgrade: typeof service.upgrade = (req, socket, head) => {
          service.upgrade(req, socket, head);
          upgradeTaken();
        };
        return { ...service, upgrade };
      },
    });
    const { hostname, port } = new URL(started.url);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    await once(socket, 'connect');
    // A form body that has not all arrived: the form parser waits on it, as a streamed answer or a long poll waits (a JSON body here would be a 415 at once, from its headers).
    socket.write(`POST /api/v1/agents/register HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nlabel=al`);
    // Destroyed by the server (a reset, with the body unread): `close` either way.
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // Node no longer counts that connection as its own: without the service closing it, this waited for ever.
    await serving;
    await started.close();
    await closed;
    rmSync(dir, { recursive: true, force: true });
  });
});
