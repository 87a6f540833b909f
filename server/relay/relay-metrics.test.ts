import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RelayCounts } from './domain/relay-counts.js';
import { relayMetrics } from './relay-metrics.js';
import { RelayStore } from './relay-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function openStore(): RelayStore {
  const dir = mkdtempSync(join(tmpdir(), 'relay-metrics-'));
  dirs.push(dir);
  return new RelayStore(dir);
}
const lines = (text: string, prefix: string) => text.split('\n').filter((l) => l.startsWith(prefix));

describe('relayMetrics', () => {
  it('reads the store once per scrape for all the store-wide metrics', async () => {
    const store = openStore();
    const reads = vi.spyOn(store, 'readBeside');
    const { registry } = relayMetrics({ store, counts: new RelayCounts() });
    const text = await registry.metrics();
    // The counts (items, nodes) and the peers: two reads for ten metrics.
    expect(reads).toHaveBeenCalledTimes(2);
    expect(lines(text, 'hilbench_relay_items ')).toEqual(['hilbench_relay_items 0']);
    expect(lines(text, 'hilbench_relay_store_read_failed ')).toEqual(['hilbench_relay_store_read_failed 0']);
    await registry.metrics();
    expect(reads).toHaveBeenCalledTimes(4);
    await store.close();
  });

  it('still answers the per-replica metrics when the store cannot be read, and says so', async () => {
    const store = openStore();
    const counts = new RelayCounts();
    counts.voteTaken({ stored: true, duplicate: false, equivocation: false });
    const { registry } = relayMetrics({ store, counts });
    await store.close();
    const text = await registry.metrics();
    expect(lines(text, 'hilbench_relay_store_read_failed ')).toEqual(['hilbench_relay_store_read_failed 1']);
    // Unknown, not 0 (prom-client writes NaN as "Nan", which Prometheus reads as NaN); peers without series.
    expect(lines(text, 'hilbench_relay_items ')).toEqual(['hilbench_relay_items Nan']);
    expect(lines(text, 'hilbench_relay_nodes ')).toEqual(['hilbench_relay_nodes Nan']);
    expect(lines(text, 'hilbench_relay_peers{')).toEqual([]);
    expect(lines(text, 'hilbench_relay_votes_total{outcome="stored"}')).toEqual(['hilbench_relay_votes_total{outcome="stored"} 1']);
  });
});
