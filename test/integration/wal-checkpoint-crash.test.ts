import Database from 'better-sqlite3';
import { execa } from 'execa';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPowerCutShim, filesAfterPowerCut, powerCutEnv } from '../support/power-cut.js';
import { tempDataDir } from '../support/relay-test-kit.js';

// A process writing through the WAL checkpointer (decision 0760), checkpoints running on its
// thread and on its loop, killed with SIGKILL, seen two ways:
// - a process crash: what the kernel holds survives, so every row it reported committed is in the
//   file when it is opened again, and the file is sound;
// - a power cut (decision 0900): the process runs with a shim (test/support/power-cut-shim.c) that
//   keeps what each fsync and fdatasync made durable; opened from those copies alone, with every
//   unsynced write lost, the file is sound and holds every row `WalSync` (decision 0480) reported
//   synced. A checkpoint that let the WAL start again before the database file was synced would
//   lose rows there. It plays back one power cut, the one that keeps no unsynced write; a disk
//   that keeps some of them, in another order, is not played.
const child = resolve(import.meta.dirname, '../support/wal-writer-child.ts');
const data = tempDataDir('wal-checkpoint-crash-');
afterAll(() => data.remove());
const shim = buildPowerCutShim(data.dir);
if ('notBuilt' in shim) console.warn(`hilbench: the power-cut half of wal-checkpoint-crash skipped: ${shim.notBuilt}`);

interface Killed {
  /** The crashed files' directory, and a copy of them as a power cut left them (empty without the shim). */
  writes: string;
  afterPowerCut: string;
  keptThroughPowerCut: string[];
  /** The last row reported committed, and the last reported synced. */
  accepted: number;
  durable: number;
}

/**
 * Runs the writer in a directory of its own until `settleWhen` holds (then tells it to settle and
 * waits for `settled`, when `settle`) and kills it with SIGKILL.
 */
async function writeAndKill(name: string, options: { settle: boolean; killWhen: (seen: { thread: number; loop: number; accepted: number; durable: number }) => boolean }): Promise<Killed> {
  const writes = join(data.dir, name);
  mkdirSync(writes);
  const writer = execa('node', ['--import', 'tsx', child, join(writes, 'crash.sqlite')], { reject: false, buffer: false, env: 'preload' in shim ? powerCutEnv(shim.preload, writes) : {} });
  const seen = { thread: 0, loop: 0, accepted: 0, durable: 0 };
  let rest = '';
  let settling = false;
  await new Promise<void>((done, fail) => {
    writer.stdout?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const [what, value] = line.split(' ');
        if (what === 'accepted') seen.accepted = Number(value);
        if (what === 'durable') seen.durable = Math.max(seen.durable, Number(value));
        if (what === 'checkpoint') seen[value as 'thread' | 'loop']++;
        if (what === 'failed') fail(new Error(line));
        if (what === 'settled') done();
      }
      if (settling || !options.killWhen(seen)) return;
      if (!options.settle) return done();
      settling = true;
      writer.stdin?.write('settle\n');
    });
    void writer.then((result) => fail(new Error(`the writer ended before it was killed: ${result.exitCode} ${String(result.stderr)}`)));
  });
  writer.kill('SIGKILL');
  await writer;
  // The power cut's files first: opening the crashed ones checkpoints and deletes their WAL.
  const afterPowerCut = join(data.dir, `${name}-after-power-cut`);
  mkdirSync(afterPowerCut);
  const keptThroughPowerCut = 'preload' in shim ? filesAfterPowerCut(writes, afterPowerCut) : [];
  return { writes, afterPowerCut, keptThroughPowerCut, accepted: seen.accepted, durable: seen.durable };
}

/** Rows in the database at `file`, checked sound first. */
function rowsIn(file: string): { n: number; top: number } {
  const reopened = new Database(file);
  try {
    expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
    return reopened.prepare('SELECT COUNT(*) AS n, COALESCE(MAX(n), 0) AS top FROM accepted').get() as { n: number; top: number };
  } finally {
    reopened.close();
  }
}

/** Every row reported synced is in the files the power cut left, in order, none missing. */
function expectSyncedRowsKept(killed: Killed): void {
  expect(killed.keptThroughPowerCut).toEqual(['crash.sqlite', 'crash.sqlite-wal']);
  const kept = rowsIn(join(killed.afterPowerCut, 'crash.sqlite'));
  expect(kept.top).toBeGreaterThanOrEqual(killed.durable);
  expect(kept.n).toBe(kept.top);
}

describe('WAL checkpoints off the event loop across a crash', () => {
  it('loses no committed row when the writer is killed mid-stream, and no synced one when the power is cut then', { timeout: 120_000 }, async () => {
    // Killed once both kinds of checkpoint have happened (the thread's a few times) and more rows came
    // after; a machine fast enough for the thread always to catch up is let off the loop's.
    const killed = await writeAndKill('mid-stream', { settle: false, killWhen: (seen) => seen.thread >= 3 && seen.accepted > 2000 && (seen.loop >= 1 || seen.accepted > 20_000) });
    // Every row reported, in order, with none missing (rows committed after the last report may be there too).
    const crashed = rowsIn(join(killed.writes, 'crash.sqlite'));
    expect(crashed.top).toBeGreaterThanOrEqual(killed.accepted);
    expect(crashed.n).toBe(crashed.top);
    if ('preload' in shim) expectSyncedRowsKept(killed);
  });

  it.skipIf(!('preload' in shim))('loses no synced row when the power is cut just after a checkpoint on the thread let the WAL start again', { timeout: 120_000 }, async () => {
    // The moment the thread's syncs matter: its checkpoint copied the whole WAL, the next commit
    // wrote over the WAL's start, and that commit is on disk. Reached by events (see the writer).
    const killed = await writeAndKill('after-restart', { settle: true, killWhen: (seen) => seen.thread >= 3 && seen.accepted > 2000 });
    expectSyncedRowsKept(killed);
  });
});
