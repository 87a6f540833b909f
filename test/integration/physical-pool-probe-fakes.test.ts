import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchFile, parseBenchFile } from '../../backends/probe/bench-file.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, getJob, submit } from './bench-job-requests.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/**
 * A pool of physical boards from the bench file (issue 27, decisions 0550, 0551), end to end with the
 * real probe backend on the stand-in bench of test/fakes/openocd: two F4 kits, each its own fake
 * probe and serial pty, are one pool `stm32f4-discovery` of two instances; a job runs on the kit
 * its instance names, and one kit failing is quarantined alone while the other serves.
 */

const ADMIN = 'pool-admin';
const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(7) }] });
const fake = new FakeBench();
let bench: BenchFile;

beforeAll(async () => {
  // Two stand-in kits (their ptys and fake probes, named kit-a and kit-b), listed as one board's instances.
  await fake.start([
    { boardId: 'kit-a', kind: 'openocd' },
    { boardId: 'kit-b', kind: 'openocd' },
  ]);
  const kit = (instance: string, name: string) => ({
    instance,
    probe: { kind: 'openocd', serialNumber: `FAKE-${name.toUpperCase()}`, interface: 'interface/stlink.cfg' },
    serial: { path: fake.hostEnd(name), baudRate: 115200 },
    timeouts: { flashMs: 20_000, resetMs: 20_000, killGraceMs: 500 },
  });
  bench = parseBenchFile({ version: 1, boards: { 'stm32f4-discovery': [kit('left', 'kit-a'), kit('right', 'kit-b')] } }, path.join(fake.dir, 'bench.yaml'));
});
afterAll(() => fake.stop());

const config = fake.serviceConfig(() => bench, ADMIN);

describe('a pool of two physical kits from one bench file', () => {
  it('hands out each kit as an instance, runs a job on the kit it names, and quarantines a failing kit alone', { timeout: 120_000 }, async () => {
    const app = await startBenchTestApp(config);
    try {
      const left = 'stm32f4-discovery.1@local';
      const right = 'stm32f4-discovery.2@local';
      const { boards } = (await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; instances?: { total: number; list: Array<{ instance: string }> } }> };
      const f4 = boards.find((b) => b.id === 'stm32f4-discovery')!;
      expect(f4.status).toBe('free');
      expect(f4.instances!.list.map((i) => i.instance)).toEqual([left, right]);

      // Kit b's probe fails every flash: a job on instance 2 fails, the same job on instance 1 runs.
      fake.setBehaviour('kit-b', 'verify-fail');
      const alice = await app.register('alice');
      const onLeft = await submit(app, alice.token, { board: left, uart_seconds: '3' }, f4Elf);
      await app.jobReaches(onLeft.job_id, 'done', 'failed');
      const ran = await getJob(app, alice.token, onLeft.job_id);
      expect(ran.failure).toBeNull();
      expect(ran.uart).toMatchObject({ text: expect.stringContaining(fakeBootLine(firmwareImage(f4Elf).sha256)) });
      for (let i = 0; i < 3; i++) {
        const onRight = await submit(app, alice.token, { board: right, uart_seconds: '1' }, f4Elf);
        await app.jobReaches(onRight.job_id, 'done', 'failed');
        expect((await getJob(app, alice.token, onRight.job_id)).failure).toMatchObject({ kind: 'flash-failed' });
      }

      // The failing kit alone is quarantined: the board's own record is untouched, the pool serves on with kit a.
      expect((await app.server.service.store.boardHealth.get(right)).quarantine?.reason).toMatch(/^quarantined after 3 consecutive infrastructure failures: flash-failed: /);
      expect((await app.server.service.store.boardHealth.get('stm32f4-discovery')).quarantine).toBeUndefined();
      const session = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'stm32f4-discovery' }) });
      expect(((await session.json()) as { instance: string }).instance).toBe(left);
      const admin = (await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as {
        boards: Array<{ id: string; instances?: { quarantined: number; list: Array<{ instance: string; quarantined: boolean; held_by: string | null }> } }>;
      };
      const pool = admin.boards.find((b) => b.id === 'stm32f4-discovery')!.instances!;
      expect(pool.quarantined).toBe(1);
      expect(pool.list).toMatchObject([
        { instance: left, quarantined: false, held_by: 'alice' },
        { instance: right, quarantined: true, held_by: null },
      ]);
    } finally {
      await app.close();
    }
  });
});

describe('a bench file with two entries for one physical board', () => {
  it('stops `hilbench serve` before it starts, naming both entries, with nothing created', { timeout: 60_000 }, async () => {
    const file = path.join(fake.dir, 'twice.yaml');
    // The second kit's entry names the first kit's serial port: one board listed twice.
    writeFileSync(
      file,
      [
        'version: 1',
        'boards:',
        '  stm32f4-discovery:',
        '    - instance: left',
        `      probe: { kind: openocd, serialNumber: "FAKE-KIT-A", interface: interface/stlink.cfg }`,
        `      serial: { path: ${fake.hostEnd('kit-a')} }`,
        '    - instance: right',
        `      probe: { kind: openocd, serialNumber: "FAKE-KIT-B", interface: interface/stlink.cfg }`,
        `      serial: { path: ${fake.hostEnd('kit-a')} }`,
        '',
      ].join('\n'),
    );
    const dataDir = path.join(fake.dir, 'never-created');
    const run = await execa('node', [cli, 'serve', '--port', '0', '--data-dir', dataDir, '--bench-file', file, '--no-relay'], { reject: false, timeout: 50_000 });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain(
      `${file}: two entries for one physical board: boards.stm32f4-discovery.0 (instance left) and boards.stm32f4-discovery.1 (instance right) name the same serial device`,
    );
    expect(existsSync(dataDir)).toBe(false);
  });
});
