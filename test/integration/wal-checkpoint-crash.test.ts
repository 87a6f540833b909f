import Database from 'better-sqlite3';
import { execa } from 'execa';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../support/relay-test-kit.js';

// A process writing through the WAL checkpointer (decision 0760), checkpoints running on its
// thread and on its loop, killed with SIGKILL: every row it reported committed is in the file when
// it is opened again, and the file is sound. (A process crash, not a power cut: what the kernel
// holds survives; the power-cut half is WalSync's fdatasync, decision 0480, unchanged.)
const child = resolve(import.meta.dirname, '../support/wal-writer-child.ts');
const data = tempDataDir('wal-checkpoint-crash-');
afterAll(() => data.remove());

describe('WAL checkpoints off the event loop across a crash', () => {
  it('loses no committed row when the writer is killed mid-stream', async () => {
    const file = join(data.dir, 'crash.sqlite');
    const writer = execa('node', ['--import', 'tsx', child, file], { reject: false, buffer: false });
    let accepted = 0;
    const seen = { thread: 0, loop: 0 };
    let rest = '';
    await new Promise<void>((done, fail) => {
      writer.stdout?.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          const [what, value] = line.split(' ');
          if (what === 'accepted') accepted = Number(value);
          if (what === 'checkpoint') seen[value as 'thread' | 'loop']++;
          if (what === 'failed') fail(new Error(line));
        }
        // Killed once both kinds of checkpoint have happened (the thread's a few times) and more rows came
        // after; a machine fast enough for the thread always to catch up is let off the loop's.
        if (seen.thread >= 3 && accepted > 2000 && (seen.loop >= 1 || accepted > 20_000)) done();
      });
      void writer.then((result) => fail(new Error(`the writer ended before it was killed: ${result.exitCode} ${String(result.stderr)}`)));
    });
    writer.kill('SIGKILL');
    await writer;
    const reopened = new Database(file);
    try {
      expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
      const { n, top } = reopened.prepare('SELECT COUNT(*) AS n, MAX(n) AS top FROM accepted').get() as { n: number; top: number };
      // Every row reported, in order, with none missing (rows committed after the last report may be there too).
      expect(top).toBeGreaterThanOrEqual(accepted);
      expect(n).toBe(top);
    } finally {
      reopened.close();
    }
  });
});
