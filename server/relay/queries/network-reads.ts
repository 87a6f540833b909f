import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { RelayDeps } from '../relay-deps.js';
import type { RelayTotals } from '../../storage/relay/count-repository.js';
import type { PeerRow } from '../../storage/relay/peer-repository.js';

/** GET /network shows at most this many slice edges and pairs. */
const networkEdgesMax = 1000;

/** The network as this relay sees it (GET /network). */
export interface NetworkPicture {
  selfSlice: QuorumSet | undefined;
  counts: RelayTotals;
  peers: PeerRow[];
  edges: { node_id: string; qset: string; hash: string }[];
  pairs: [string, string][];
}

/**
 * What anyone may read of the federation: where to start (GET /seeds), the peers (GET /relays,
 * /reach) and the network with its counts (GET /network). Each returns data; routes shape it.
 */
export class NetworkReads {
  constructor(private readonly deps: RelayDeps) {}

  /** The configured seeds, then the peers not among them, each address once. */
  async seeds(): Promise<string[]> {
    return [...new Set<string>([...this.deps.seeds, ...(await this.peers()).map((p) => p.url)])];
  }

  /** Every peer this relay federates with. */
  peers(): Promise<PeerRow[]> {
    return this.deps.federation.peers();
  }

  /** Counts, this relay's slice, its peers, and who trusts and paired with whom. */
  async network(): Promise<NetworkPicture> {
    const { store } = this.deps;
    const data = store.plainData;
    const edges = await data.slices.edges(networkEdgesMax);
    const selfSlice = await store.plain(this.deps.voting.selfSlice());
    // Kept or read off an index, never a walk of the tables: anyone may ask, as often as they like (decision 1100).
    const counts = await data.counts.totals();
    const peers = await this.peers();
    return { selfSlice, counts, peers, edges, pairs: await data.social.pairs(networkEdgesMax) };
  }
}
