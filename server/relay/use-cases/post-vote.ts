import { parseVote, type Vote } from '../../../core/relay/vote.js';
import type { RelayDeps } from '../relay-deps.js';
import { requireItemId } from '../domain/id-checks.js';
import { RelayRefusal, invalidInputAt } from '../domain/relay-errors.js';
import { unknownSliceHash } from '../domain/statement-log.js';
import { voteTimeInputProblem } from '../domain/statement-time.js';
import { VoteIngest, type VoteOutcome } from '../domain/vote-ingest.js';

/** A vote as posted and what storing it did. */
export interface PostedVote {
  vote: Vote;
  outcome: VoteOutcome;
}

/** The request a vote came with: counted in flight until it closes (see `VoteIngest.request`). */
export interface VoteRequest {
  once(event: 'close', listener: () => void): unknown;
}

/**
 * POST /items/{id}/vote: a signed x.vote/1 statement checked (item, shape, path, time, signature,
 * voter, slice), then stored: by the ingest's group commit, or, a lone vote of a registered voter
 * on SQLite, in a transaction of its own while its signature is checked on the signature thread
 * (decision 1090). A refused vote changes nothing: every refusal but that one's forged signature
 * comes before the write path, and a forged signature found ahead rolls its transaction back.
 */
export class PostVote {
  private readonly ingest: VoteIngest;

  constructor(private readonly deps: RelayDeps) {
    this.ingest = new VoteIngest(deps.store, deps.voting, deps.selfKey.nodeId, () => deps.clock.nowMs(), deps.signatureChecksAhead ?? null);
  }

  /** Checks and stores `document` as a vote on `itemId`; settles once it is on disk. */
  run(itemId: string, document: unknown, request: VoteRequest): Promise<PostedVote> {
    return this.ingest.request(request, () => this.post(itemId, document));
  }

  private async post(itemId: string, document: unknown): Promise<PostedVote> {
    const { ingest, deps } = this;
    requireItemId(itemId);
    // Only whether it exists: the vote's answer needs nothing else of the item's row.
    if (!(await ingest.itemStored(itemId))) throw new RelayRefusal('item_not_found', 'no such item on this relay');
    const parsed = parseVote(document);
    if (!parsed.ok) throw invalidInputAt(['body'], parsed.problems);
    const vote = parsed.value;
    if (vote.item !== itemId) throw invalidInputAt(['body'], [{ path: ['item'], code: 'not_path_item', input: vote.item }]);
    const timeProblem = voteTimeInputProblem(vote.created_at, deps.clock.nowMs());
    if (timeProblem !== null) throw invalidInputAt(['body'], [timeProblem]);
    // Looked up once, before the check (a vote sent while its voter registers may be either side of it).
    const voter = { registered: await ingest.voterRegistered(vote.voter) };
    const sliceKnown = vote.slice_hash === undefined || (await deps.store.plain(deps.voting.quorumSetByHash(vote.slice_hash))) !== undefined;
    // A lone vote that would pass every check but its signature's is stored while the signature is
    // checked off the loop, and committed only if it passes (decision 1090); the refusals are the same.
    const ahead = voter.registered && sliceKnown ? ingest.storeCheckedAhead(vote) : null;
    if (ahead) {
      const outcome = await ahead;
      if (outcome === 'forged') throw notVoterSignature(vote);
      return { vote, outcome };
    }
    // On the thread pool, before the write path, when others are in flight: concurrent clients' signatures are checked in parallel.
    if (!(await ingest.verify(vote, voter))) throw notVoterSignature(vote);
    if (!voter.registered) throw new RelayRefusal('signer_not_registered', 'voter is not a registered node: POST /register first');
    // Checked here as well as where it is stored: a refusal never reaches the write path.
    if (!sliceKnown) throw unknownSliceHash(vote.slice_hash as string);
    return { vote, outcome: await ingest.submit(vote) };
  }
}

function notVoterSignature(vote: Vote): RelayRefusal {
  return invalidInputAt(['body'], [{ path: ['sig'], code: 'not_voter_signature', input: vote.sig }]);
}
