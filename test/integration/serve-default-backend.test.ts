import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HilbenchProcesses } from '../support/hilbench-processes.js';

/**
 * Decision 0494: `hilbench serve` with no `--backend` (what `npm start` runs) on a machine with
 * nothing but Node: no QEMU, no Renode (both pointed at files that do not exist). The Pico and
 * the Uno run their firmware on the simulators inside hilbench, and the other boards are offline
 * with the reason, so the README's walk-through shows what the firmware prints.
 */
const repo = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-serve-default-'));
const processes = new HilbenchProcesses();
let benchUrl = '';
let backendChoice = '';

beforeAll(async () => {
  const { match } = await processes.start(['serve', '--port', '0', '--no-relay', '--data-dir', path.join(dir, 'data')], /bench service on (http:\/\/127\.0\.0\.1:\d+) \(.*, backend (\w+)\)/, {
    env: { HILBENCH_QEMU: path.join(dir, 'no-qemu-system-arm'), HILBENCH_RENODE: path.join(dir, 'no-renode') },
    unsetEnv: ['HILBENCH_BACKEND'],
  });
  [benchUrl, backendChoice] = [match[1] as string, match[2] as string];
}, 60_000);

afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

interface BoardView {
  id: string;
  status: string;
  backend: string;
  offline_reason: string | null;
}

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

describe('hilbench serve with no --backend (npm start)', () => {
  it('says it runs on auto, lists the Pico and the Uno on the simulator, and every other board offline with the reason', async () => {
    expect(backendChoice).toBe('auto');
    const { boards } = await json<{ boards: BoardView[] }>(await fetch(`${benchUrl}/api/v1/boards`));
    const byId = new Map(boards.map((b) => [b.id, b]));
    for (const id of ['pico', 'uno']) expect({ id, status: byId.get(id)?.status, backend: byId.get(id)?.backend }).toEqual({ id, status: 'free', backend: 'sim' });
    const qemuBoard = byId.get('mps2-an385');
    expect(qemuBoard?.status).toBe('offline');
    expect(qemuBoard?.offline_reason).toContain('no-qemu-system-arm not found');
    expect(boards.filter((b) => b.status !== 'offline').map((b) => b.id).sort()).toEqual(['pico', 'uno']);
  });

  it("runs the README walk-through's firmware for real: the Pico's UART is what hello.elf prints", async () => {
    const auth = { authorization: `Bearer ${(await json<{ token: string }>(await fetch(`${benchUrl}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'newcomer' }) }))).token}` };
    const { session_id } = await json<{ session_id: string }>(
      await fetch(`${benchUrl}/api/v1/sessions`, { method: 'POST', headers: auth, body: new URLSearchParams({ board: 'pico', idle_seconds: '90' }) }),
    );
    const form = new FormData();
    form.set('board', 'pico');
    form.set('session', session_id);
    form.set('firmware', new Blob([readFileSync(path.join(repo, 'firmware/examples/pico/hello.elf'))]), 'hello.elf');
    const { job_id } = await json<{ job_id: string }>(await fetch(`${benchUrl}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body: form }));
    // The job's own bound ends it (max UART seconds); ?wait= answers as soon as it is done.
    let job: { state: string; uart: { text: string } } = { state: 'queued', uart: { text: '' } };
    for (let poll = 0; poll < 10 && !['done', 'failed'].includes(job.state); poll++) {
      job = await json(await fetch(`${benchUrl}/api/v1/jobs/${job_id}?wait=60`, { headers: auth }));
    }
    expect(job.state).toBe('done');
    expect(job.uart.text).toMatch(/^hilbench hello board=pico\r\ntick 1\r\n/);
    expect(job.uart.text).not.toContain('hilbench-mock');
  }, 120_000);
});
