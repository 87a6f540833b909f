import type { Caller } from '../domain/credentials.js';
import { Federation, type ProbeResult, type PullResult } from '../domain/federation.js';
import type { PeerRow } from '../../storage/relay/peer-repository.js';
import type { RelayDeps } from '../relay-deps.js';
import { RelayRefusal } from '../domain/relay-errors.js';

/**
 * What an operator asks of the relay's federation over HTTP (POST /reach, /reach/probe,
 * /federation/pull). Each makes the relay fetch URLs someone chose: operators only, and nobody
 * when the relay names none.
 */
export class Reach {
  constructor(private readonly deps: RelayDeps) {}

  /** Adds (or adds again) the peer at `url`. */
  add(caller: Caller, url: string): Promise<{ peer: PeerRow; created: boolean }> {
    return this.deps.federation.addRequestedPeer(url, this.operator(caller));
  }

  /** Probes every peer now, or the known one at `url`. */
  async probe(caller: Caller, url: string | undefined): Promise<ProbeResult[]> {
    this.operator(caller);
    return this.deps.federation.probeAll(await this.knownPeer(url));
  }

  /** Pulls from every peer now, or the known one at `url`, until caught up. */
  async pull(caller: Caller, url: string | undefined): Promise<PullResult[]> {
    this.operator(caller);
    return this.deps.federation.pullNow(await this.knownPeer(url));
  }

  private operator(caller: Caller): string {
    const operators = this.deps.operators;
    if (operators.size === 0) {
      throw new RelayRefusal('not_operator', 'this relay names no operators, so nobody may add or probe peers over HTTP; start it with the operators option (node ids) to allow them. Peers from its configuration are still probed');
    }
    if (caller.kind !== 'human' || !operators.has(caller.nodeId)) throw new RelayRefusal('not_operator', 'only this relay\'s operators may add, probe or pull from peers');
    return caller.nodeId;
  }

  private async knownPeer(url: string | undefined): Promise<string | undefined> {
    const only = url === undefined ? undefined : Federation.normalizeUrl(url, ['body', 'url']);
    if (only !== undefined && !(await this.deps.federation.peer(only))) throw new RelayRefusal('peer_unknown', 'not a known peer; POST /reach first');
    return only;
  }
}
