import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { registerNode } from '../support/relay-test-kit.js';
import { crashReproductions } from './crash-reproductions.js';
import { rawExchange } from './raw-http.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/**
 * Issue 9 regression, the way it was seen: `hilbench serve` (bench and relay in one process) in a
 * child process, sent the requests that used to end it with exit 1 ("Unexpected end of form ...
 * Emitted 'error' event on FileStream instance"). In process, such a crash would take the vitest
 * worker down rather than fail one test; here the child must still be running and answering.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-serve-fuzz-'));
let server: ResultPromise | undefined;
let exited: { exitCode?: number; stderr?: unknown } | undefined;
let benchUrl = '';
let relayUrl = '';

beforeAll(async () => {
  server = execa('node', [cli, 'serve', '--port', '0', '--relay-port', '0', '--data-dir', path.join(dir, 'data')], { reject: false });
  void server.then((result) => {
    exited = result;
  });
  [benchUrl, relayUrl] = await new Promise<[string, string]>((resolve, reject) => {
    let seen = '';
    server?.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const bench = /bench service on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen)?.[1];
      const relay = /relay service on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen)?.[1];
      if (bench && relay) resolve([bench, relay]);
    });
    void server?.then((r) => reject(new Error(`serve exited early: ${r.exitCode} ${String(r.stderr)}`)));
  });
}, 30_000);

afterAll(async () => {
  server?.kill('SIGTERM');
  await server;
  rmSync(dir, { recursive: true, force: true });
});

describe('hilbench serve in another process survives the requests that used to end it', () => {
  it('answers each with a JSON 400 (or closes the connection a client abandoned) and keeps serving both services', async () => {
    const registered = await fetch(`${benchUrl}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'fuzz' }) });
    const { token } = (await registered.json()) as { token: string };
    const node = await registerNode({ baseUrl: relayUrl }, systemClock);
    for (const repro of crashReproductions({ benchToken: token, relayAuth: node.auth })) {
      const exchange = await rawExchange(repro.service === 'bench' ? benchUrl : relayUrl, repro.request);
      if (repro.expected) {
        const [answer] = exchange.responses;
        expect({ name: repro.name, status: answer?.status, body: answer && (JSON.parse(answer.body.toString()) as unknown) }).toEqual({
          name: repro.name,
          status: repro.expected.status,
          body: { detail: repro.expected.detail },
        });
      }
      expect(exited, `serve ended after "${repro.name}": ${String(exited?.stderr)}`).toBeUndefined();
      expect((await fetch(`${benchUrl}/api/v1/health`)).status).toBe(200);
      expect((await fetch(`${relayUrl}/health`)).status).toBe(200);
    }
  });
});
