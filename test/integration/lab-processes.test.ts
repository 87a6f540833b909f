import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { afterAll, describe, expect, it } from 'vitest';
import { firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

// A lab in processes on loopback (issue 10): `hilbench serve --no-local-worker`, worker tokens
// created with `hilbench worker-token create`, and two `hilbench worker` processes, one with a
// QEMU board and one with a simulator board. A worker killed with SIGKILL mid-job fails its job
// with the reason and takes its board offline; started again, the board is back.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-lab-'));
const ADMIN = 'lab-admin-token';
const processes = new HilbenchProcesses();
afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

const start = (args: string[], ready: RegExp) => processes.start(args, ready);

const hello = (board: string) => {
  const entry = loadFirmwareManifest().firmware.find((f) => f.board === board && f.program === 'hello');
  if (!entry) throw new Error(`no hello firmware for ${board}`);
  return readFileSync(firmwarePath(entry));
};

describe('a lab: a server with no worker of its own, and worker processes', () => {
  it('runs jobs on a QEMU worker and a simulator worker; a worker killed mid-job fails it and its board comes back with the worker', { timeout: 240_000 }, async () => {
    const server = await start(
      ['serve', '--no-local-worker', '--no-relay', '--port', '0', '--data-dir', path.join(dir, 'data'), '--admin-token', ADMIN,
        '--worker-heartbeat-seconds', '1', '--worker-offline-after-seconds', '3', '--worker-claim-seconds', '3', '--max-uart-seconds', '600'],
      /bench service on (http:\/\/127\.0\.0\.1:\d+)/,
    );
    const url = server.match[1]!;

    const tokenFile = async (label: string) => {
      const created = await execa('node', [cli, 'worker-token', 'create', '--server', url, '--admin-token', ADMIN, '--label', label]);
      const token = created.stdout.split('\n').at(-1)!.trim();
      expect(token).toMatch(/^hbw_/);
      const file = path.join(dir, `${label}.token`);
      writeFileSync(file, token, { mode: 0o600 });
      return file;
    };
    const qemuToken = await tokenFile('qemu-pi');
    const simToken = await tokenFile('sim-pi');
    const worker = (tokenFileName: string, backend: string, board: string) =>
      start(['worker', '--server', url, '--token-file', tokenFileName, '--backend', backend, '--boards', board, '--cache-dir', path.join(dir, `cache-${backend}`)], /hilbench worker .* serving/);
    let qemuWorker = await worker(qemuToken, 'qemu', 'netduinoplus2');
    await worker(simToken, 'sim', 'pico');

    const status = async (board: string) => {
      const { boards } = (await (await fetch(`${url}/api/v1/boards`)).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
      return boards.find((b) => b.id === board)!;
    };
    await until('both workers’ boards free', async () => (await status('netduinoplus2')).status === 'free' && (await status('pico')).status === 'free');

    const registered = (await (await fetch(`${url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'lab-agent' }) })).json()) as { token: string };
    const auth = { authorization: `Bearer ${registered.token}` };
    const flash = async (board: string, uartSeconds: string) => {
      const body = new FormData();
      body.set('board', board);
      body.set('uart_seconds', uartSeconds);
      body.set('firmware', new Blob([hello(board)], { type: 'application/octet-stream' }), 'hello.elf');
      const res = await fetch(`${url}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body });
      expect(res.status, await res.clone().text()).toBe(200);
      return String(((await res.json()) as { job_id: string }).job_id);
    };
    const job = async (id: string) =>
      (await (await fetch(`${url}/api/v1/jobs/${id}`, { headers: auth })).json()) as { state: string; uart: { text: string } | null; failure: { kind: string; message: string } | null };

    const onQemu = await flash('netduinoplus2', '1');
    const onSim = await flash('pico', '1');
    for (const id of [onQemu, onSim]) await until(`job ${id} to finish`, async () => ['done', 'failed'].includes((await job(id)).state));
    expect(await job(onQemu)).toMatchObject({ state: 'done', uart: { text: expect.stringMatching(/^hilbench hello board=netduinoplus2\r\ntick 1/) } });
    expect(await job(onSim)).toMatchObject({ state: 'done', uart: { text: expect.stringMatching(/^hilbench hello board=pico\r\ntick 1/) } });

    // SIGKILL the QEMU worker while its job runs: the job fails with the reason, the board goes offline.
    const long = await flash('netduinoplus2', '120');
    await until(`job ${long} running`, async () => (await job(long)).state === 'running');
    // Killed once the server has saved some of what it printed (saves are at most a second apart;
    // the API shows a running job's UART only when it ends, so the server's database is read).
    const database = new Database(path.join(dir, 'data', 'bench.sqlite'), { readonly: true, fileMustExist: true });
    await until(`job ${long} to have UART saved`, async () => {
      const row = database.prepare('SELECT uart_bytes FROM jobs WHERE job_id = ?').get(long) as { uart_bytes: Buffer | null } | undefined;
      return (row?.uart_bytes?.length ?? 0) > 0;
    });
    database.close();
    qemuWorker.child.kill('SIGKILL');
    await until(`job ${long} to fail`, async () => (await job(long)).state === 'failed');
    const killed = await job(long);
    expect(killed.failure).toMatchObject({ kind: 'interrupted', message: expect.stringMatching(/^worker \S+ stopped answering while this job was running/) });
    // The UART the worker had sent before it died is kept with the failure.
    expect(killed.uart?.text).toMatch(/^hilbench hello board=netduinoplus2\r\n/);
    await until('netduinoplus2 offline', async () => (await status('netduinoplus2')).status === 'offline');
    expect((await status('netduinoplus2')).offline_reason).toMatch(/^worker qemu-pi \(wk_\S+\) missed its heartbeats/);
    expect((await status('pico')).status).toBe('free');

    qemuWorker = await worker(qemuToken, 'qemu', 'netduinoplus2');
    await until('netduinoplus2 free again', async () => (await status('netduinoplus2')).status === 'free');
    const again = await flash('netduinoplus2', '1');
    await until(`job ${again} to finish`, async () => ['done', 'failed'].includes((await job(again)).state));
    expect((await job(again)).state).toBe('done');
  });
});
