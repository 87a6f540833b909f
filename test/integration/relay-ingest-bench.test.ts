import { describe, expect, it } from 'vitest';
import { runRelayIngestBench } from '../../perf/relay-ingest.bench.js';

/**
 * The ingest benchmark runs end to end on a tiny network and reports every row it promises. Speed
 * itself is never asserted here (npm run bench measures it); this keeps the benchmark from rotting.
 */
describe('runRelayIngestBench', () => {
  it('registers voters, ingests every statement through an outside client and reports the rates beside GET /me and POST /me, and the ratios', async () => {
    const rows = await runRelayIngestBench({ voters: [4, 6], sliceSize: 2, concurrency: 2, floorRequests: 5, minStatementsPerRound: 10 });
    const scene = (n: number) => [
      `GET /me, ${n} voters, sequential`,
      `POST /me, ${n} voters, sequential`,
      `vote ingest, ${n} voters, sequential`,
      `vote ingest, ${n} voters, sequential, p50`,
      `vote ingest, ${n} voters, sequential, p99`,
      `one vote's signature check, ${n} voters`,
      `one WAL sync, ${n} voters`,
      `GET /me, ${n} voters, 2 clients`,
      `POST /me, ${n} voters, 2 clients`,
      `vote ingest, ${n} voters, 2 clients`,
      `relay node's bulletin after ${2 * n} statements, p50`,
    ];
    const ratios = (n: number) => [
      `ingest / GET /me, ${n} voters, sequential`,
      `ingest / GET /me, ${n} voters, sequential, at most`,
      `ingest / GET /me, ${n} voters, 2 clients`,
      `ingest / POST /me, ${n} voters, sequential`,
      `ingest / POST /me, ${n} voters, 2 clients`,
      `ingest by 2 clients / sequential ingest, ${n} voters`,
    ];
    expect(rows.map((r) => r.name)).toEqual([
      ...scene(4),
      ...scene(6),
      ...ratios(4),
      ...ratios(6),
      'ingest at 6 / at 4 voters, sequential',
      'ingest at 6 / at 4 voters, 2 clients',
    ]);
    for (const row of rows) expect(Number.isFinite(row.value) && row.value > 0, row.name).toBe(true);
    // The bound is the floor against the floor plus two positive costs: below 1.
    for (const n of [4, 6]) expect(rows.find((r) => r.name === `ingest / GET /me, ${n} voters, sequential, at most`)!.value).toBeLessThan(1);
    // Every voter voted and accepted yes and each trusts two others: the relay node confirms.
    expect(rows.find((r) => r.name === "relay node's bulletin after 8 statements, p50")!.note).toMatch(/state confirmed/);
  });

  it('refuses a network too small to vote on', async () => {
    await expect(runRelayIngestBench({ voters: [1] })).rejects.toThrow(/at least 2 voters/);
  });
});
