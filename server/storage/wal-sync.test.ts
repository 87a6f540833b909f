import Database from 'better-sqlite3';
import { renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDataDir } from '../../test/support/relay-test-kit.js';
import { WalSync } from './wal-sync.js';

/** A sync the test finishes by hand: which syncs started, and a way to end each. */
function gatedSync() {
  const started: { finish: () => void; fail: (error: Error) => void }[] = [];
  const syncFile = () =>
    new Promise<void>((resolve, reject) => {
      started.push({ finish: resolve, fail: reject });
    });
  return { started, syncFile };
}

/** Whether `promise` has settled once pending callbacks ran (no timers: a few turns of the microtask queue). */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let k = 0; k < 5; k++) await Promise.resolve();
  return done;
}

let data: ReturnType<typeof tempDataDir>;
let walPath: string;
let wal: WalSync | undefined;
beforeEach(() => {
  data = tempDataDir('wal-sync-');
  walPath = join(data.dir, 'db.sqlite-wal');
  writeFileSync(walPath, '');
});
afterEach(() => {
  wal?.close();
  wal = undefined;
  data.remove();
});

describe('WalSync (group commit off the event loop, decision 0480)', () => {
  it('answers at once when nothing was committed since the last sync, and starts a sync at each commit when none runs', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    expect(wal.whenDurable()).toBeNull();
    wal.noteCommit();
    expect(gate.started).toHaveLength(1);
    const durable = wal.whenDurable() as Promise<void>;
    expect(durable).not.toBeNull();
    expect(await settled(durable)).toBe(false);
    gate.started[0]!.finish();
    expect(await settled(durable)).toBe(true);
    expect(wal.whenDurable()).toBeNull();
  });

  it('makes a commit made while a sync runs wait for one more sync, shared by every such commit', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    wal.noteCommit();
    const first = wal.whenDurable() as Promise<void>;
    // Two commits while the first sync runs: its flush may have missed them.
    wal.noteCommit();
    const second = wal.whenDurable() as Promise<void>;
    wal.noteCommit();
    const third = wal.whenDurable() as Promise<void>;
    expect(gate.started).toHaveLength(1);
    gate.started[0]!.finish();
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(false);
    // One more sync for both, begun after the first ended.
    expect(gate.started).toHaveLength(2);
    expect(await settled(third)).toBe(false);
    gate.started[1]!.finish();
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(true);
    expect(gate.started).toHaveLength(2);
    expect(wal.whenDurable()).toBeNull();
  });

  it('runs one sync at a time even when a commit comes between the end of a sync and the start of the one queued behind it', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    wal.noteCommit();
    const first = wal.whenDurable() as Promise<void>;
    // Called back when the first sync ends, before the queued follow-up starts (registered first).
    void first.then(() => wal!.noteCommit());
    wal.noteCommit();
    const second = wal.whenDurable() as Promise<void>;
    gate.started[0]!.finish();
    expect(await settled(first)).toBe(true);
    // Both later commits share the follow-up: a second sync beside it would race it for the descriptor.
    expect(gate.started).toHaveLength(2);
    gate.started[1]!.finish();
    expect(await settled(second)).toBe(true);
    expect(wal.whenDurable()).toBeNull();
    expect(gate.started).toHaveLength(2);
  });

  it('refuses every later answer once a sync failed, even with nothing new committed', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    wal.noteCommit();
    const durable = wal.whenDurable() as Promise<void>;
    gate.started[0]!.fail(new Error('EIO: i/o error, fdatasync'));
    await expect(durable).rejects.toThrow(/could not be synced to disk \(EIO: i\/o error, fdatasync\); restart the relay/);
    expect(wal.failure?.message).toMatch(/could not be synced to disk/);
    await expect(wal.whenDurable()).rejects.toThrow(/could not be synced/);
    wal.noteCommit();
    await expect(wal.whenDurable()).rejects.toThrow(/could not be synced/);
    expect(gate.started).toHaveLength(1);
  });

  it('syncs the real WAL file with fdatasync by default', async () => {
    wal = new WalSync(walPath);
    wal.noteCommit();
    await wal.whenDurable();
    expect(wal.whenDurable()).toBeNull();
    expect(wal.busy).toBe(false);
  });

  it('refuses, for good and without syncing, once the WAL file was deleted under it', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile, owner: 'bench service' });
    unlinkSync(walPath);
    wal.noteCommit();
    await expect(wal.whenDurable()).rejects.toThrow(/bench service database's WAL could not be synced to disk \(.*db\.sqlite-wal was deleted under the open database.*\); restart the bench service/);
    // The stale descriptor was never synced: that would have reported durable what is nowhere.
    expect(gate.started).toHaveLength(0);
    await expect(wal.whenDurable()).rejects.toThrow(/was deleted/);
  });

  it('refuses once the WAL file was replaced by another file of the same name', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    // A new file first, so the old inode is still in use and cannot be reused for the new one.
    writeFileSync(`${walPath}.new`, '');
    renameSync(`${walPath}.new`, walPath);
    wal.noteCommit();
    await expect(wal.whenDurable()).rejects.toThrow(/was replaced under the open database/);
    expect(gate.started).toHaveLength(0);
  });

  // Regression: a stat failing otherwise than "no such file" threw out of noteCommit (after the
  // commit, so the request that committed failed with a 500) and recorded no failure.
  it('refuses, for good, when the WAL path cannot even be looked at (a symlink loop put in its place)', async () => {
    const gate = gatedSync();
    wal = new WalSync(walPath, { syncFile: gate.syncFile });
    unlinkSync(walPath);
    symlinkSync(walPath, walPath);
    expect(() => wal!.noteCommit()).not.toThrow();
    await expect(wal.whenDurable()).rejects.toThrow(/relay database's WAL could not be synced to disk \(.*db\.sqlite-wal could not be looked at: ELOOP/);
    expect(gate.started).toHaveLength(0);
    expect(wal.failure).not.toBeNull();
  });

  it('notices SQLite leaving WAL mode (it deletes the -wal file) at the next commit', async () => {
    const db = new Database(join(data.dir, 'real.sqlite'));
    try {
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t (x)');
      const gate = gatedSync();
      wal = new WalSync(`${db.name}-wal`, { syncFile: gate.syncFile });
      db.pragma('journal_mode = DELETE');
      db.prepare('INSERT INTO t VALUES (1)').run();
      wal.noteCommit();
      await expect(wal.whenDurable()).rejects.toThrow(/was deleted under the open database \(journal mode switched away from WAL\?\)/);
      expect(gate.started).toHaveLength(0);
    } finally {
      db.close();
    }
  });
});
