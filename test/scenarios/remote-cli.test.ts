import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

// `hilbench run --bench-url` against `hilbench serve` in ANOTHER process: the only way to see the
// process-lifetime bugs (a wait on unref'd timers lets Node exit with code 13 once idle sockets close).
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-remote-'));
let server: ResultPromise | undefined;
let benchUrl = '';

beforeAll(async () => {
  server = execa('node', [cli, 'serve', '--port', '0', '--no-relay', '--data-dir', path.join(dir, 'data')], { reject: false });
  benchUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    server?.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /bench service on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (m) resolve(m[1] as string);
    });
    void server?.then((r) => reject(new Error(`serve exited early: ${r.exitCode} ${r.stderr}`)));
  });
}, 30_000);

afterAll(async () => {
  server?.kill('SIGTERM');
  await server;
  rmSync(dir, { recursive: true, force: true });
});

describe('hilbench run against a remote bench in another process', () => {
  it('a 6 s delay between requests keeps the run alive to its report', { timeout: 60_000 }, async () => {
    const file = path.join(dir, 'pause.yaml');
    writeFileSync(
      file,
      ['version: 1', 'name: long pause', 'clock: wall', 'steps:', '  - register: { label: pauser, as: a }', '  - delay: 6s', '  - http: { method: GET, path: /api/v1/boards }', ''].join('\n'),
    );
    const json = path.join(dir, 'pause.json');
    const run = await execa('node', [cli, 'run', file, '--bench-url', benchUrl, '--json', json], { reject: false });
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^PASSED +.*pause\.yaml/m);
    expect(readFileSync(json, 'utf8')).toContain('"passed"');
  });

  // bench-auth-failures steps[3] failed now and then with "fetch failed" (EPIPE): the server
  // answered 401 and closed while the client was still writing the upload. Only seen across processes.
  it('30 unauthenticated multipart flashes all read their 401 (none EPIPE)', { timeout: 60_000 }, async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 30; i++) {
      const body = new FormData();
      body.set('board', 'pico');
      body.set('firmware', new Blob([new Uint8Array(16 * 1024).fill(i)], { type: 'application/octet-stream' }), 'fw.elf');
      try {
        const res = await fetch(`${benchUrl}/api/v1/jobs/flash`, { method: 'POST', body });
        await res.text();
        outcomes.push(String(res.status));
      } catch (err) {
        outcomes.push(`${(err as Error).message} (${String((err as { cause?: { code?: unknown } }).cause?.code)})`);
      }
    }
    expect(outcomes).toEqual(Array.from({ length: 30 }, () => '401'));
  });
});
