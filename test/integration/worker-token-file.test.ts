import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { HilbenchProcesses } from '../support/hilbench-processes.js';
import { hilbenchCli } from '../support/compiled-cli.js';

// The README's lab recipe, as a shell runs it: `hilbench worker-token create ... > pi-1.token`,
// then `hilbench worker --token-file pi-1.token`. The token file once held the note printed before
// the token as well, and the worker sent both lines as its token: every announce failed, the log
// line carried the token, and the worker retried for ever.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-token-file-'));
const ADMIN = 'token-file-admin';
const processes = new HilbenchProcesses();
afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('worker tokens through files', () => {
  it('worker-token create prints the token alone on stdout, so "> file" makes a token file the worker takes', { timeout: 120_000 }, async () => {
    const server = await processes.start(
      ['serve', '--no-local-worker', '--no-relay', '--port', '0', '--data-dir', path.join(dir, 'data'), '--admin-token', ADMIN],
      // The banner says where jobs run: a server without a local worker runs none itself.
      /bench service on (http:\/\/127\.0\.0\.1:\d+) \(data in \S+, jobs on remote workers\)/,
    );
    const url = server.match[1]!;
    const created = await execa('node', [hilbenchCli, 'worker-token', 'create', '--server', url, '--admin-token', ADMIN, '--label', 'pi-1']);
    expect(created.stdout).toMatch(/^hbw_[A-Za-z0-9_-]+$/);
    expect(created.stderr).toMatch(/worker wk_\S+ \(pi-1\) created; its token, shown once/);
    const tokenFile = path.join(dir, 'pi-1.token');
    writeFileSync(tokenFile, `${created.stdout}\n`, { mode: 0o600 });
    await processes.start(['worker', '--server', url, '--token-file', tokenFile, '--backend', 'mock', '--boards', 'pico', '--cache-dir', path.join(dir, 'cache')], /hilbench worker pi-1 \(wk_\S+\) serving pico/);
  });

  it('a token file that holds more than a token is refused at start, naming the file and not its contents', { timeout: 60_000 }, async () => {
    const secret = `hbw_${'S'.repeat(43)}`;
    const tokenFile = path.join(dir, 'two-lines.token');
    writeFileSync(tokenFile, `worker wk_x (pi-2) created; its token, shown once:\n${secret}\n`, { mode: 0o600 });
    const run = await execa('node', [hilbenchCli, 'worker', '--server', 'http://127.0.0.1:9', '--token-file', tokenFile, '--backend', 'mock'], { reject: false, all: true });
    expect(run.exitCode).toBe(1);
    expect(run.all).toContain(`--token-file ${tokenFile} does not hold a worker token`);
    expect(run.all).not.toContain(secret);
  });
});
