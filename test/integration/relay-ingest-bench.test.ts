import { describe, expect, it } from 'vitest';
import { runRelayIngestBench } from '../../perf/relay-ingest.bench.js';

/**
 * The ingest benchmark runs end to end on a tiny network and reports every row it promises. Speed
 * itself is never asserted here (npm run bench measures it); this keeps the benchmark from rotting.
 */
describe('runRelayIngestBench', () => {
  it('ingests every statement through an outside client in alternating blocks and reports the rates, counts and ratios', async () => {
    // 10 voters hold 20 statements, more than a round's 8: their rounds take a sample of 4 voters.
    const rows = await runRelayIngestBench({ voters: [10, 4], sliceSize: 2, concurrency: 2, statements: 8, blockSize: 4, coldPairs: 2 });
    const scene = (n: number) => [
      `POST /me, ${n} voters, sequential`,
      `one vote's signature check, ${n} voters`,
      `vote ingest, ${n} voters, sequential`,
      `vote ingest, ${n} voters, sequential, p50`,
      `vote ingest, ${n} voters, sequential, p99`,
      `GET /me, ${n} voters, 2 clients`,
      `POST /me, ${n} voters, 2 clients`,
      `vote ingest, ${n} voters, 2 clients`,
      `event loop per vote, ${n} voters, 2 clients`,
      `event loop per GET /me, ${n} voters, 2 clients`,
      `event loop per POST /me, ${n} voters, 2 clients`,
      `fdatasyncs per accepted vote, ${n} voters, 2 clients`,
      `write transactions per accepted vote, ${n} voters, 2 clients`,
      `fdatasyncs per accepted vote, ${n} voters, sequential`,
      `write transactions per accepted vote, ${n} voters, sequential`,
      `first vote after a restart, ${n} voters, p50`,
      `next vote of the same voter, ${n} voters, p50`,
      `ingest / (POST /me + signature check), ${n} voters, sequential`,
      `ingest / POST /me, ${n} voters, 2 clients`,
      `ingest / GET /me, ${n} voters, 2 clients`,
      `ingest by 2 clients / sequential ingest, ${n} voters`,
      `event loop per vote / per GET /me, ${n} voters, 2 clients`,
      `first vote after a restart / next vote, ${n} voters`,
      // A vote whose slice the relay sees first against one whose slice is stored (decision 0770).
      `vote with a first-seen slice, ${n} voters, p50`,
      `vote with a stored slice, ${n} voters, p50`,
      `first-seen slice / stored slice, ${n} voters`,
    ];
    expect(rows.map((r) => r.name)).toEqual([...scene(4), ...scene(10), 'ingest at 10 / at 4 voters, sequential', 'ingest at 10 / at 4 voters, 2 clients']);
    expect(rows.find((r) => r.name === 'vote ingest, 10 voters, sequential')!.note).toMatch(/4 voters sampled evenly over all 10/);
    expect(rows.find((r) => r.name === 'vote ingest, 4 voters, sequential')!.note).toMatch(/whole items/);
    for (const row of rows) expect(Number.isFinite(row.value) && row.value > 0, row.name).toBe(true);
    // Counts, not speed: one client waits for each vote's commit and sync before it sends the next.
    for (const n of [4, 10]) {
      expect(rows.find((r) => r.name === `write transactions per accepted vote, ${n} voters, sequential`)!.value).toBe(1);
      expect(rows.find((r) => r.name === `fdatasyncs per accepted vote, ${n} voters, sequential`)!.value).toBe(1);
    }
  });

  it('refuses a network too small to vote on', async () => {
    await expect(runRelayIngestBench({ voters: [1] })).rejects.toThrow(/at least 2 voters/);
  });
});
