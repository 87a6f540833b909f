import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { readChildLedger } from '../../backends/process/child-ledger.js';
import { isProcessAlive, processStartTicks, type ProcessIdentity } from '../../backends/process/process-identity.js';
import { firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { childLedgerDir } from '../../server/lifecycle/reap-leftovers.js';
import { until } from '../support/hilbench-processes.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

// `hilbench serve` in another process, on QEMU, killed with SIGKILL mid-job (issue 9): its
// emulators must die with it, the restart must find nothing left behind and every accepted job,
// and a second serve on the same data dir must be refused while the first keeps working.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-crash-'));
const dataDir = path.join(dir, 'data');
// The servers' own temp dir, so their emulator scratch folders live apart from every other test's:
// any server starting elsewhere removes the folders of dead owners in its temp dir, and would take
// the killed server's (which this test counts before the restart) while test files run in parallel.
const scratchParent = path.join(dir, 'tmp');
mkdirSync(scratchParent);
const servers = new Set<ResultPromise>();
afterAll(async () => {
  for (const server of servers) server.kill('SIGKILL');
  await Promise.allSettled(servers);
  rmSync(dir, { recursive: true, force: true });
});

interface Serve {
  process: ResultPromise;
  pid: number;
  benchUrl: string;
}

/** Starts `hilbench serve` on `dataDir` with the QEMU backend; resolves once the bench and relay listen. */
async function serve(): Promise<Serve> {
  const child = execa('node', [cli, 'serve', '--port', '0', '--relay-port', '0', '--data-dir', dataDir, '--backend', 'qemu', '--max-uart-seconds', '600'], { reject: false, env: { TMPDIR: scratchParent } });
  servers.add(child);
  const benchUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const bench = /bench service on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (bench && /relay service on http/.test(seen)) resolve(bench[1] as string);
    });
    void child.then((r) => reject(new Error(`serve exited early: ${r.exitCode} ${r.stdout} ${r.stderr}`)));
  });
  return { process: child, pid: child.pid!, benchUrl };
}


const hello = (board: string) => {
  const entry = loadFirmwareManifest().firmware.find((f) => f.board === board && f.program === 'hello');
  if (!entry) throw new Error(`no hello firmware for ${board}`);
  return readFileSync(firmwarePath(entry));
};

async function register(url: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'crash-test' }) });
  expect(res.status).toBe(200);
  return String(((await res.json()) as { token: string }).token);
}

/** A session on `board`, so that several of its jobs can be queued behind each other. */
async function session(url: string, token: string, board: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: new URLSearchParams({ board, idle_seconds: '3600' }) });
  expect(res.status, await res.clone().text()).toBe(200);
  return String(((await res.json()) as { session_id: string }).session_id);
}

async function flash(url: string, token: string, board: string, sessionId?: string): Promise<string> {
  const body = new FormData();
  body.set('board', board);
  if (sessionId) body.set('session', sessionId);
  body.set('uart_seconds', '600');
  body.set('firmware', new Blob([hello(board)], { type: 'application/octet-stream' }), 'hello.elf');
  const res = await fetch(`${url}/api/v1/jobs/flash`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body });
  expect(res.status, await res.clone().text()).toBe(200);
  return String(((await res.json()) as { job_id: string }).job_id);
}

async function job(url: string, token: string, jobId: string): Promise<{ status: number; state?: string; failure?: { kind: string } | null }> {
  const res = await fetch(`${url}/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, ...((await res.json()) as { state?: string; failure?: { kind: string } | null }) };
}

/** The QEMU processes the server at `ownerPid` has written in its child ledger, checked against /proc. */
function qemusOf(ownerPid: number): ProcessIdentity[] {
  return readChildLedger(childLedgerDir(dataDir))
    .map(({ record }) => record)
    .filter((r) => r.owner.pid === ownerPid && r.command.includes('qemu-system-arm'))
    .map((r) => r.child);
}

const scratchDirsOf = (pid: number) => readdirSync(scratchParent).filter((name) => name.startsWith(`hbq-${pid}-`));

describe('hilbench serve killed with SIGKILL during QEMU jobs', () => {
  it('leaves no emulator running, and the restart finds no leftovers and every accepted job', { timeout: 180_000 }, async () => {
    const first = await serve();
    const token = await register(first.benchUrl);
    const mps2 = await session(first.benchUrl, token, 'mps2-an385');
    const running = [await flash(first.benchUrl, token, 'mps2-an385', mps2), await flash(first.benchUrl, token, 'lm3s6965evb')];
    const queued = await flash(first.benchUrl, token, 'mps2-an385', mps2);
    const accepted = [...running, queued];
    for (const id of running) await until(`job ${id} to be running`, async () => (await job(first.benchUrl, token, id)).state === 'running');
    const qemus = qemusOf(first.pid);
    expect(qemus).toHaveLength(2);
    for (const qemu of qemus) {
      expect(isProcessAlive(qemu)).toBe(true);
      expect(readFileSync(`/proc/${qemu.pid}/cmdline`, 'utf8')).toContain('qemu-system-arm');
    }
    expect(scratchDirsOf(first.pid)).toHaveLength(2);

    first.process.kill('SIGKILL');
    await first.process;
    // The kernel's parent-death signal, not a restart, ends them.
    for (const qemu of qemus) await until(`QEMU pid ${qemu.pid} to die with its server`, () => !isProcessAlive(qemu), 10_000);
    // What only a restart can clean: the dead server's scratch folders, ledger and a partial relay upload.
    expect(scratchDirsOf(first.pid)).toHaveLength(2);
    expect(qemusOf(first.pid)).toHaveLength(2);
    const partialUpload = path.join(dataDir, 'relay', 'files', 'tmp-0123456789abcdef');
    mkdirSync(path.dirname(partialUpload), { recursive: true });
    writeFileSync(partialUpload, 'half an upload');

    const second = await serve();
    try {
      expect(scratchDirsOf(first.pid)).toEqual([]);
      expect(qemusOf(first.pid)).toEqual([]);
      expect(existsSync(partialUpload)).toBe(false);
      for (const id of accepted) {
        const after = await job(second.benchUrl, token, id);
        expect(after.status, `job ${id}`).toBe(200);
        expect(['queued', 'flashing', 'running', 'done', 'failed'], `job ${id}`).toContain(after.state);
      }
      for (const id of running) expect(await job(second.benchUrl, token, id)).toMatchObject({ state: 'failed', failure: { kind: 'interrupted' } });

      // The queued job now runs on the restarted server; a second serve on the same data dir is
      // refused without touching it (it used to mark it interrupted).
      await until(`job ${queued} to run after the restart`, async () => (await job(second.benchUrl, token, queued)).state === 'running');
      // Bounded: before the fix the second serve started and listened for ever.
      const refused = await execa('node', [cli, 'serve', '--port', '0', '--relay-port', '0', '--data-dir', dataDir, '--backend', 'qemu'], { reject: false, timeout: 60_000 });
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toContain(`data directory ${dataDir} is in use by the bench service of hilbench process ${second.pid}`);
      expect(refused.stderr).toContain(`Stop that process first (kill ${second.pid})`);
      expect(await job(second.benchUrl, token, queued)).toMatchObject({ status: 200, state: 'running' });

      // An orderly stop ends its emulator too.
      const secondQemus = qemusOf(second.pid);
      expect(secondQemus).toHaveLength(1);
      second.process.kill('SIGTERM');
      expect((await second.process).exitCode).toBe(0);
      for (const qemu of secondQemus) expect(isProcessAlive(qemu)).toBe(false);
      expect(scratchDirsOf(second.pid)).toEqual([]);
      expect(processStartTicks(second.pid)).toBeUndefined();
    } finally {
      second.process.kill('SIGKILL');
    }
  });
});
