import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { hilbenchCli } from '../support/compiled-cli.js';

// A `hilbench worker` process keeps dialling while its server is away (docs/worker-protocol.md):
// started before the server, or with the server stopped under it, it serves its board again once
// the server is back. Its retries wait on timers, and the process once let Node exit on them: a
// worker started first ended with status 13 after its first failed announce, and one whose server
// restarted ended with status 0 after its first failed claim.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-worker-outlives-'));
const ADMIN = 'outlives-admin';
const processes = new HilbenchProcesses();
afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

/** A loopback port nothing listens on now (the server is started on it later). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('a hilbench worker process outlives its server', () => {
  it('waits for a server that is not up yet, and comes back after the server restarts', { timeout: 180_000 }, async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const serve = () =>
      processes.start(
        ['serve', '--no-local-worker', '--no-relay', '--port', String(port), '--data-dir', path.join(dir, 'data'), '--admin-token', ADMIN],
        /bench service on http:\/\/127\.0\.0\.1:\d+/,
      );
    const picoFree = (worker: { child: { exitCode: number | null } }) => async () => {
      // A worker that ended will never come back: say so at once rather than at the wait's bound.
      if (worker.child.exitCode !== null) throw new Error(`the worker exited with status ${worker.child.exitCode}`);
      const res = await fetch(`${url}/api/v1/boards`).catch(() => undefined);
      if (!res?.ok) return false;
      const { boards } = (await res.json()) as { boards: Array<{ id: string; status: string }> };
      return boards.some((b) => b.id === 'pico' && b.status === 'free');
    };

    // The token is made on the server, which then stops: the worker starts with nobody answering.
    let server = await serve();
    const created = await execa('node', [hilbenchCli, 'worker-token', 'create', '--server', url, '--admin-token', ADMIN, '--label', 'patient']);
    server.child.kill('SIGTERM');
    await server.child;
    const worker = await processes.start(
      ['worker', '--server', url, '--token', created.stdout.trim(), '--backend', 'mock', '--boards', 'pico', '--cache-dir', path.join(dir, 'cache')],
      /announcing to http:\S+ failed; trying again/,
    );
    server = await serve();
    await until('the worker started before its server announces pico', picoFree(worker));

    // The server goes away under a serving worker and comes back on the same address.
    server.child.kill('SIGKILL');
    await server.child;
    server = await serve();
    await until('the worker serves pico to the restarted server', picoFree(worker));
    expect(worker.child.exitCode).toBeNull();
  });
});
