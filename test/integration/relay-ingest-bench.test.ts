import { describe, expect, it } from 'vitest';
import { runRelayIngestBench } from '../../perf/relay-ingest.bench.js';

/**
 * The ingest benchmark runs end to end on a tiny network and reports every row it promises. Speed
 * itself is never asserted here (npm run bench measures it); this keeps the benchmark from rotting.
 */
describe('runRelayIngestBench', () => {
  it('registers voters, ingests every statement and reports ingest rates and bulletin reads', async () => {
    let tick = 0;
    // A fake monotonic clock: each reading is 1 ms later, so every rate and latency is finite and positive.
    const rows = await runRelayIngestBench({ voters: [4], sliceSize: 2, concurrency: 2, bulletinAfterVotes: [3], bulletinReads: 3, nowMs: () => tick++ });
    expect(rows.map((r) => r.name)).toEqual([
      'vote ingest, 4 voters, sequential',
      'vote ingest, 4 voters, sequential, p50',
      'vote ingest, 4 voters, sequential, p99',
      'vote ingest, 4 voters, 2 concurrent clients',
      'bulletin read after 3 votes, 4 voters, p50',
      'bulletin read after 3 votes, 4 voters, p99',
      'bulletin read after 8 votes, 4 voters, p50',
      'bulletin read after 8 votes, 4 voters, p99',
    ]);
    for (const row of rows) expect(Number.isFinite(row.value) && row.value > 0, row.name).toBe(true);
    // Every voter voted and accepted yes and each trusts two others: the relay node confirms.
    expect(rows.find((r) => r.name === 'bulletin read after 8 votes, 4 voters, p50')!.note).toMatch(/state confirmed/);
  });

  it('refuses a network too small to vote on', async () => {
    await expect(runRelayIngestBench({ voters: [1] })).rejects.toThrow(/at least 2 voters/);
  });
});
