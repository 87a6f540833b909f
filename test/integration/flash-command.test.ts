import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BenchClient } from '../../clients/bench/bench-client.js';
import type { RunningBenchServer } from '../../server/bench/start-bench-server.js';
import { startBenchTestApp } from '../support/bench-test-app.js';
import { until } from '../support/hilbench-processes.js';
import { startSystemClockBench } from '../support/system-clock-bench.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/** `hilbench flash` (issue 11): serial output live on stdout, a verdict, Wokwi's exit codes, reports. */
const root = path.resolve(import.meta.dirname, '../..');
const hello = path.join(root, 'firmware/examples/pico/hello.elf');
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-flash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const flash = (...args: string[]) => execa('node', [cli, 'flash', hello, '--board', 'pico', ...args], { reject: false });

describe('hilbench flash in process (sim)', () => {
  it('exits 0 when the expected text appears, 1 on the fail text, 42 when the capture ends without it', async () => {
    const passed = await flash('--backend', 'sim', '--expect-text', 'tick 2');
    expect(passed.exitCode).toBe(0);
    expect(passed.stdout).toMatch(/^hilbench hello board=pico\r\ntick 1\r\ntick 2/);
    expect(passed.stderr).toContain('hilbench flash: passed: the firmware printed "tick 2"');
    expect((await flash('--backend', 'sim', '--fail-text', 'tick 1')).exitCode).toBe(1);
    const timedOut = await flash('--backend', 'sim', '--expect-regex', 'tick \\d{3}', '--timeout', '0.5');
    expect(timedOut.exitCode).toBe(42);
    expect(timedOut.stderr).toContain('did not appear within 0.5 s of device time');
  });

  it('writes the serial log and a JUnit case with the output and the failure', async () => {
    const log = path.join(dir, 'serial.log');
    const junit = path.join(dir, 'junit.xml');
    const res = await flash('--backend', 'sim', '--expect-text', 'never printed', '--timeout', '0.3', '--serial-log-file', log, '--junit', junit);
    expect(res.exitCode).toBe(42);
    expect(readFileSync(log, 'utf8')).toMatch(/^hilbench hello board=pico\r\ntick 1\r\n/);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain('<testcase classname="hilbench flash" name="pico hello.elf"');
    expect(xml).toContain('<failure type="timeout"');
    expect(xml).toMatch(/<system-out>hilbench hello board=pico\r\ntick 1/);
  });

  it('never runs an unknown board or a missing file: exit 2, the message starting with what failed', async () => {
    const res = await flash('--backend', 'sim', '--board', 'no-such-board');
    expect(res.exitCode).toBe(2);
    expect(res.stderr).toContain('hilbench flash: never ran: board "no-such-board" is not in the catalog');
    const missing = await execa('node', [cli, 'flash', path.join(dir, 'nope.elf'), '--board', 'pico', '--backend', 'sim'], { reject: false });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/^hilbench flash: never ran: reading the firmware .*nope\.elf failed: ENOENT/m);
  });

  it('ends its output with a newline even when the verdict comes mid-line', async () => {
    const res = await flash('--backend', 'sim', '--expect-text', 'tick 2');
    expect(res.exitCode).toBe(0);
    // execa strips one final newline: what was printed ends "tick 2" then a line end, never "tick 2" alone.
    expect(`${res.stdout}\n`).toMatch(/tick 2\r?\n+$/);
    expect(res.stderr).toMatch(/^hilbench flash: passed/m);
  });
});

describe('usage errors', () => {
  it('print the one-line error and where to look, not the whole help', async () => {
    const res = await execa('node', [cli, 'flash', hello], { reject: false });
    // Bad arguments: it never ran (exit 2), not "the firmware failed" (1).
    expect(res.exitCode).toBe(2);
    expect(res.stderr).toContain("error: required option '--board <id>' not specified");
    expect(res.stderr).toContain('(see hilbench <command> --help)');
    expect(res.stderr).not.toContain('Usage:');
  });
});

describe('hilbench flash against a bench server', () => {
  it('prints the job’s UART from the live stream and exits 0 on the expected text', async () => {
    const app = await startBenchTestApp();
    try {
      const { token } = await app.register('ci');
      const res = await flash('--server', app.url, '--token', token, '--expect-text', 'hilbench-mock: reset pico');
      expect(res.stderr).toContain('hilbench flash: passed');
      expect(res.exitCode).toBe(0);
      expect(res.stdout).toContain('hilbench-mock: reset pico');
      const refused = await flash('--server', app.url, '--token', 'hb_wrong');
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toMatch(new RegExp(`^hilbench flash: never ran: the bench at ${app.url} refused POST /api/v1/jobs/flash \\(401\\)`, 'm'));
    } finally {
      await app.close();
    }
    const unreachable = await flash('--server', app.url, '--token', 'hb_x');
    expect(unreachable.exitCode).toBe(2);
    expect(unreachable.stderr).toMatch(/^hilbench flash: never ran: the bench at .* could not be reached/m);
  });
});

describe('waiting for one instance of a pool on a bench server (hostile19 M4)', () => {
  let bench: RunningBenchServer;
  let token: string;
  beforeAll(async () => {
    bench = await startSystemClockBench({ backend: 'sim', localWorker: { poolSizes: { byBoard: { pico: 2 } } } });
    token = (await new BenchClient({ baseUrl: bench.url }).register('ci')).token;
  }, 60_000);
  afterAll(() => bench?.close());

  it('prints its place in the pool’s line while it waits for pico.2@local, then runs there', async () => {
    const other = new BenchClient({ baseUrl: bench.url, token: (await new BenchClient({ baseUrl: bench.url }).register('other')).token });
    const held = await other.openSession('pico.2@local');
    const waiting = execa('node', [cli, 'flash', hello, '--board', 'pico.2@local', '--server', bench.url, '--token', token, '--expect-text', 'tick 1', '--wait', '60'], { reject: false });
    let seen = '';
    waiting.stderr?.on('data', (chunk: Buffer) => (seen += chunk.toString()));
    await until('the queue position on stderr', () => /waiting for board pico\.2@local: number 1 of 1 in its queue/.test(seen));
    expect(seen).not.toMatch(/is not shown/);
    await held.end();
    const ran = await waiting;
    expect(ran.stderr).toMatch(/^hilbench flash: passed/m);
    expect(ran.exitCode).toBe(0);
  });
});

describe('back-to-back runs on one board of a bench server (issue 31)', () => {
  let bench: RunningBenchServer;
  let token: string;
  beforeAll(async () => {
    bench = await startSystemClockBench({ backend: 'sim' });
    token = (await new BenchClient({ baseUrl: bench.url }).register('ci')).token;
  }, 60_000);
  afterAll(() => bench?.close());
  const onServer = (...args: string[]) => flash('--server', bench.url, '--token', token, ...args);
  const jobOf = (stderr: string) => /hilbench flash: job (job_\S+) on/.exec(stderr)![1]!;

  it('both pass: the first job is cancelled at its verdict, keeping its UART, so the board is free for the second', async () => {
    // A 20 s capture window: without the cancel the second run met "board pico is busy".
    const first = await onServer('--expect-text', 'tick 2', '--timeout', '20', '--wait', '0');
    expect(first.stderr).toMatch(/^hilbench flash: passed/m);
    expect(first.exitCode).toBe(0);
    const second = await onServer('--expect-text', 'tick 2', '--timeout', '20', '--wait', '0');
    expect(second.stderr).toMatch(/^hilbench flash: passed/m);
    expect(second.exitCode).toBe(0);
    const job = await new BenchClient({ baseUrl: bench.url, token }).getJob(jobOf(first.stderr));
    expect(job.failure).toEqual({ kind: 'cancelled', message: expect.stringMatching(/its agent cancelled it: hilbench flash has its verdict: the firmware printed "tick 2"$/) });
    expect(job.uart?.text).toContain('tick 2');
  });

  it('waits for a board someone else holds in its queue, printing the position, then runs', async () => {
    const other = new BenchClient({ baseUrl: bench.url, token: (await new BenchClient({ baseUrl: bench.url }).register('other')).token });
    const held = await other.openSession('pico');
    const busy = await onServer('--expect-text', 'tick 1', '--wait', '0');
    expect(busy.exitCode).toBe(2);
    expect(busy.stderr).toMatch(/^hilbench flash: never ran: the bench at .* refused POST \/api\/v1\/jobs\/flash \(409\): board pico is leased by agent "other"/m);

    const waiting = onServer('--expect-text', 'tick 1', '--wait', '60');
    let seen = '';
    waiting.stderr?.on('data', (chunk: Buffer) => (seen += chunk.toString()));
    await until('the queue position on stderr', () => /waiting for board pico: number 1 of 1 in its queue/.test(seen));
    expect(seen).toMatch(/board pico is busy: .*; waiting up to 60 s for it in its queue/);
    await held.end();
    const ran = await waiting;
    expect(ran.stderr).toMatch(/^hilbench flash: passed/m);
    expect(ran.exitCode).toBe(0);
    // The session it queued with was ended: the board is free.
    expect((await other.boards()).find((b) => b.id === 'pico')?.status).toBe('free');
  });
});
