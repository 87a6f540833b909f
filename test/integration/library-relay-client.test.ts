import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { RelayApiError, RelayClient } from '../../lib/index.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/** The public `RelayClient` (`import { RelayClient } from 'hilbench'`) against a real relay over loopback HTTP. */

const data = tempDataDir('library-relay-');
let relay: RunningRelay;
let client: RelayClient;

beforeAll(async () => {
  relay = await startRelayServer({ clock: systemClock, dataDir: data.dir });
  client = new RelayClient({ baseUrl: relay.baseUrl });
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

describe('RelayClient against a real relay', () => {
  it('registers, posts a claim, votes, and reads the item, the bulletin, the node and itself, typed', async () => {
    expect((await client.health()).status).toBe('ok');
    const { node, answer } = await client.register({ name: 'alice' });
    expect(answer.node_id).toBe(node.nodeId);
    expect((await client.me(node)).node.node_id).toBe(node.nodeId);
    const created = await client.postClaim(node, { kind: 'measurement', title: `uart at 115200 ${Date.now()}`, body: 'three runs' });
    const id = created.id;
    expect(created.created).toBe(true);
    expect((await client.item(id)).id).toBe(id);
    expect((await client.items()).items.map((i) => i.id)).toContain(id);
    const bob = (await client.register({ name: 'bob' })).node;
    // A node's slice names the others it trusts (itself is implicit).
    const vote = await client.vote(node, { item: id, value: 'yes', phase: 'vote', slice: { t: 1, v: [bob.nodeId] } });
    expect(vote).toMatchObject({ item: id });
    const bulletin = await client.bulletin(id, node.nodeId);
    expect(bulletin.node).toBe(node.nodeId);
    expect((await client.node(node.nodeId)).node_id).toBe(node.nodeId);
    // A signed declaration of alice's slice: published, and shown as her slice.
    const declared = await client.declareSlice(node, { v: [bob.nodeId] });
    expect(declared).toMatchObject({ node_id: node.nodeId, slice: { t: 1, v: [bob.nodeId], i: [] } });
    expect((await client.node(node.nodeId)).slice?.hash).toBe(declared.slice_hash);
  });

  it('an error status is a RelayApiError with the status and the relay\'s detail', async () => {
    const missing = await client.item('0'.repeat(64)).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(RelayApiError);
    expect(missing).toMatchObject({ status: 404, method: 'GET' });
    const { node } = await client.register();
    const invalid = await client.postClaim(node, { kind: 'no-such-kind', title: 't', body: 'b' }).catch((err: unknown) => err);
    expect(invalid).toMatchObject({ status: 422 });
  });
});
