import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_PROBES_ENV } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath } from '../fakes/openocd/fake-bench.js';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { hilbenchCli } from '../support/compiled-cli.js';
import { makeElf } from '../support/make-elf.js';
import { AVR_ECHO, avrProgram } from '../support/sim-programs.js';

// Serial input and board health through a real `hilbench worker` process on loopback (issue 10,
// decisions 0420, 0421, 0430): `hilbench serve --no-local-worker` and one worker with
// `--backend auto` serving an Uno on the simulator (running a USART echo) and an STM32F4 kit on the
// probe backend (the stand-in openocd of test/fakes/openocd, its board file listing Renode first).
// An agent's serial input reaches the running echo firmware and comes back in the job's UART; three
// failed flashes quarantine the kit in the server's store, and a health check asked through the
// server runs on the worker and releases it, the board free in the answer itself.
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-lab-paths-'));
const ADMIN = 'lab-paths-admin';
const F4 = 'stm32f4-discovery';
const processes = new HilbenchProcesses();
const fake = new FakeBench();
let benchYaml: string;
beforeAll(async () => {
  const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(5) }] });
  const healthElf = path.join(dir, 'health-f4.elf');
  writeFileSync(healthElf, f4Elf);
  const bench = await fake.start([{ boardId: F4, kind: 'openocd', healthCheck: { elf: healthElf, expect: 'boot sha256=[0-9a-f]{16}', withinSeconds: 10 } }], {
    quarantineAfterFailures: 3,
  });
  const { source: _source, pools: _pools, ...contents } = bench;
  benchYaml = path.join(dir, 'bench.yaml');
  writeFileSync(benchYaml, stringify(contents));
});
afterAll(async () => {
  await processes.killAll();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface BoardJson {
  id: string;
  status: string;
  offline_reason: string | null;
}

describe('a hilbench worker process: serial input and board health through the server', () => {
  it('echoes an agent’s serial input from a running job, and a health check on the worker releases a quarantined board', { timeout: 240_000 }, async () => {
    const server = await processes.start(
      ['serve', '--no-local-worker', '--no-relay', '--port', '0', '--data-dir', path.join(dir, 'data'), '--admin-token', ADMIN, '--max-uart-seconds', '600'],
      /bench service on (http:\/\/127\.0\.0\.1:\d+)/,
    );
    const url = server.match[1]!;
    const created = await execa('node', [hilbenchCli, 'worker-token', 'create', '--server', url, '--admin-token', ADMIN, '--label', 'bench-pi']);
    const tokenFile = path.join(dir, 'worker.token');
    writeFileSync(tokenFile, created.stdout.split('\n').at(-1)!.trim(), { mode: 0o600 });
    // The stand-in openocd first on PATH, told where its probes are, as on a real bench host.
    await processes.start(
      ['worker', '--server', url, '--token-file', tokenFile, '--backend', 'auto', '--boards', `uno,${F4}`, '--bench-file', benchYaml, '--cache-dir', path.join(dir, 'cache')],
      /hilbench worker .* serving stm32f4-discovery, uno/,
      { env: { PATH: `${path.dirname(fakeOpenocdPath)}${path.delimiter}${process.env.PATH ?? ''}`, [FAKE_PROBES_ENV]: fake.configPath } },
    );
    const board = async (id: string): Promise<BoardJson> => {
      const { boards } = (await (await fetch(`${url}/api/v1/boards`)).json()) as { boards: BoardJson[] };
      return boards.find((b) => b.id === id)!;
    };
    await until('uno and the kit free', async () => (await board('uno')).status === 'free' && (await board(F4)).status === 'free');

    const { token } = (await (await fetch(`${url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'lab-agent' }) })).json()) as { token: string };
    const auth = { authorization: `Bearer ${token}` };
    const flash = async (fields: Record<string, string>, elf: Uint8Array) => {
      const body = new FormData();
      for (const [k, v] of Object.entries(fields)) body.set(k, v);
      body.set('firmware', new Blob([elf], { type: 'application/octet-stream' }), 'fw.elf');
      const res = await fetch(`${url}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body });
      expect(res.status, await res.clone().text()).toBe(200);
      return ((await res.json()) as { job_id: string }).job_id;
    };
    const job = async (id: string) =>
      (await (await fetch(`${url}/api/v1/jobs/${id}`, { headers: auth })).json()) as { state: string; uart: { text: string } | null; failure: { kind: string } | null };

    // Serial input: the echo firmware runs (in a session, ended once the echo came back).
    const session = (await (await fetch(`${url}/api/v1/sessions`, { method: 'POST', headers: auth, body: new URLSearchParams({ board: 'uno', idle_seconds: '300' }) })).json()) as {
      session_id: string;
    };
    const echo = await flash({ board: 'uno', uart_seconds: '600', session: session.session_id }, avrProgram(AVR_ECHO).bytes);
    await until(`job ${echo} running`, async () => (await job(echo)).state === 'running');
    const input = 'ping through the worker\n';
    const sent = await fetch(`${url}/api/v1/jobs/${echo}/uart`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text: input }) });
    expect(sent.status, await sent.clone().text()).toBe(200);
    expect(await sent.json()).toMatchObject({ input_seq: 1, accepted_bytes: input.length });
    // The job's live UART (Server-Sent Events, as the worker reports it) until the echo shows.
    const live = await fetch(`${url}/api/v1/jobs/${echo}/uart`, { headers: auth, signal: AbortSignal.timeout(60_000) });
    expect(live.status).toBe(200);
    let seen = '';
    const reader = live.body!.pipeThrough(new TextDecoderStream()).getReader();
    try {
      while (!uartTexts(seen).includes(input)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the UART stream of job ${echo} ended before the echo; it carried: ${JSON.stringify(uartTexts(seen))}`);
        seen += value;
      }
    } finally {
      await reader.cancel();
    }
    expect((await fetch(`${url}/api/v1/sessions/${session.session_id}/end`, { method: 'POST', headers: auth })).status).toBe(200);
    await until(`job ${echo} to end with the session`, async () => ['done', 'failed'].includes((await job(echo)).state));
    expect((await job(echo)).uart?.text).toBe(input);

    // Board health: three infrastructure failures on the kit quarantine it in the server's store.
    fake.setBehaviour(F4, 'verify-fail');
    const broken = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(9) }] });
    for (let i = 0; i < 3; i++) {
      const id = await flash({ board: F4, uart_seconds: '1' }, broken);
      await until(`job ${id} to end`, async () => ['done', 'failed'].includes((await job(id)).state));
      expect(await job(id)).toMatchObject({ state: 'failed', failure: { kind: 'flash-failed' } });
    }
    expect(await board(F4)).toMatchObject({ status: 'offline', offline_reason: expect.stringMatching(/^quarantined after 3 consecutive infrastructure failures: /) });

    // The worker's own report says so at its next heartbeat (5 s apart): from then on, until the
    // heartbeat after the release, its last word on the kit is "unavailable".
    const reported = async () => {
      const { workers } = (await (await fetch(`${url}/admin/workers`, { headers: { 'x-admin-token': ADMIN } })).json()) as {
        workers: Array<{ boards: Array<{ board: string; available: boolean; reason: string | null }> }>;
      };
      return workers[0]!.boards.find((b) => b.board === F4)!;
    };
    await until('the worker reporting the kit quarantined', async () => {
      const report = await reported();
      return !report.available && /quarantined after 3/.test(report.reason ?? '');
    });

    fake.setBehaviour(F4, 'ok');
    const checked = await fetch(`${url}/admin/boards/${F4}/health-check`, { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    expect(checked.status, await checked.clone().text()).toBe(200);
    // Free in the answer itself: the server follows its store, not the worker's last report (which
    // said quarantined until its next heartbeat, 5 s apart).
    expect(await checked.json()).toMatchObject({
      board: F4,
      passed: true,
      status: 'free',
      offline_reason: null,
      uart_text: expect.stringMatching(/boot sha256=[0-9a-f]{16}/),
      health: { backend: 'probe', quarantined: false, consecutive_failures: 0 },
    });
    const after = await flash({ board: F4, uart_seconds: '1' }, makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(3) }] }));
    await until(`job ${after} to end`, async () => ['done', 'failed'].includes((await job(after)).state));
    expect((await job(after)).state).toBe('done');
  });
});

/** The text of each complete `uart` event in a Server-Sent Events stream read so far, joined. */
function uartTexts(stream: string): string {
  const events = stream.split('\n\n').slice(0, -1);
  return events
    .filter((e) => e.startsWith('event: uart\n'))
    .map((e) => (JSON.parse(/^data: (.*)$/m.exec(e)![1]!) as { text: string }).text)
    .join('');
}
