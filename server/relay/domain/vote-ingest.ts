import { type Vote, verifyVote, verifyVoteAsync } from '../../../core/relay/vote.js';
import { BoundedCache } from './bounded-cache.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { RelayStore } from '../relay-store.js';
import type { RelayBulletin, StoredVote, Voting } from './voting.js';
import type { AheadCheck, SignatureChecksAhead } from './signature-thread.js';

/** What storing one vote did, and the relay node's bulletin once it committed. */
export interface VoteOutcome extends StoredVote {
  /** Statements the relay node signed because of it (stored and emitted with it). */
  emitted: Vote[];
  bulletin: RelayBulletin;
}

/** Votes taken into one transaction at most; the rest wait for the next. */
const MAX_BATCH = 64;

/** Item ids, and voters' node ids, each kept as seen stored: about 13 MB at most for both. */
const SEEN_STORED_MAX = 65_536;

/**
 * After a vote checked ahead turned out forged, lone votes are checked before they are stored for
 * this long: the forged one's rollback emptied the relay's caches (decision 1090), and a client
 * sending forgeries one at a time must not empty them more often than this.
 */
export const CHECK_AHEAD_PAUSE_MS = 60_000;

/** Thrown inside a vote's transaction to roll a forged vote back; never leaves `VoteIngest` (no Error: its stack costs a lone vote ~0.05 ms). */
const FORGED: unique symbol = Symbol('forged vote');

/**
 * The write path of `POST /items/{id}/vote` with group commit (issue 18). Verified votes that
 * arrive while the event loop is busy are stored together, each in its own savepoint of one
 * transaction, so concurrent clients share one commit (one WAL sync) instead of queueing for one
 * each; a vote that fails rolls back its savepoint only. Nothing is answered before its commit:
 * an accepted vote is on disk. The bulletin in each answer is the relay node's after the commit
 * (it may already count later votes of the same batch).
 *
 * While other vote requests are in flight, signatures are checked on the thread pool, in parallel
 * with the event loop, and a batch waits until none is still being checked, so the votes of
 * clients that sent together commit together; a request alone checks and stores at once (a thread
 * hop and a batch wait would only add to its latency).
 */
export class VoteIngest {
  private pending: { vote: Vote; resolve: (outcome: VoteOutcome) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** Signature checks running on the thread pool: the votes the next batch waits for. */
  private verifying = 0;
  /**
   * Items and voters seen stored. The relay never deletes an item or a node (no DELETE of either),
   * so a yes once read stays true, and a vote skips its two lookups (decision 0620); a no is read
   * again each time.
   */
  private readonly seenItems = new BoundedCache<string, true>(SEEN_STORED_MAX);
  private readonly seenVoters = new BoundedCache<string, true>(SEEN_STORED_MAX);
  /** Until when (`nowMs`) lone votes are checked before they are stored (`CHECK_AHEAD_PAUSE_MS`). */
  private aheadPausedUntilMs = -Infinity;
  /** Lone votes stored while their signatures were checked ahead, and those of them found forged (tests, decision 1090). */
  readonly checkedAhead = { stored: 0, forged: 0 };

  constructor(
    private readonly store: RelayStore,
    private readonly voting: Voting,
    private readonly selfNodeId: string,
    private readonly nowMs: () => number,
    /** Signature checks off the loop for lone votes (SQLite only: a transaction that runs synchronously); null: none. */
    private readonly ahead: SignatureChecksAhead | null = null,
  ) {}

  /**
   * Runs one vote request (`verify`, checks, `submit`), counted as in flight until its answer is
   * written or its connection closed: an answer waits for the disk (decision 0480), and the votes
   * that arrive meanwhile are what group commit and the parallel signature checks are for.
   */
  async request<T>(answer: { once(event: 'close', listener: () => void): unknown }, work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    answer.once('close', () => this.inFlight--);
    return work();
  }

  /** Whether the item is stored (see `seenItems`). */
  itemStored(itemId: string): Promise<boolean> {
    return this.seenStored(this.seenItems, itemId, () => this.store.plainData.items.exists(itemId));
  }

  /** Whether the voter's node is registered here (see `seenItems`). */
  voterRegistered(nodeId: string): Promise<boolean> {
    return this.seenStored(this.seenVoters, nodeId, () => this.store.plainData.nodes.exists(nodeId));
  }

  private async seenStored(seen: BoundedCache<string, true>, id: string, exists: () => Promise<boolean>): Promise<boolean> {
    if (seen.has(id)) return true;
    if (!(await exists())) return false;
    seen.set(id, true);
    return true;
  }

  /**
   * `verifyVote`, on the thread pool when other vote requests are in flight. `registered`: whether
   * the voter's node is stored (the route looks once, for this and its 403). A registered voter's
   * key passed `checkPublicKey` when it registered (here, or at the peer it was learned from:
   * `nodeIdProblem` guards every row of `nodes`), so the nodes table is that verdict, kept across
   * restarts: a voter's first vote after one pays no key check in JavaScript (issue 30). Any other
   * key is checked, so the answers are the same either way.
   */
  verify(vote: Vote, voter: { registered: boolean }): Promise<boolean> {
    const options = { keyChecked: voter.registered };
    if (this.inFlight <= 1) return Promise.resolve(verifyVote(vote, options));
    this.verifying++;
    return verifyVoteAsync(vote, options).then(
      (valid) => {
        this.checked();
        return valid;
      },
      (error: unknown) => {
        this.checked();
        throw error;
      },
    );
  }

  /** A check on the thread pool ended. */
  private checked(): void {
    this.verifying--;
    // The batch waited for this check: it goes once no other is running (the vote, if valid, has joined it by then).
    if (this.verifying === 0 && this.pending.length > 0) this.schedule();
  }

  /**
   * A lone vote (no other vote request in flight, no batch waiting) of a registered voter, stored
   * while its signature is checked on the signature thread: the transaction's statements, the
   * relay node's tally and its statements run on the loop meanwhile, and the transaction commits
   * only once the check passed; a forged vote's transaction is rolled back, so it changes nothing
   * (decision 1090). Null when the vote cannot go ahead (the caller checks it first, as before):
   * others in flight (their checks are on the thread pool and they commit together), a forgery
   * seen in the last `CHECK_AHEAD_PAUSE_MS`, or the thread not taking it. Settles `'forged'` for a
   * signature that fails, otherwise after the commit, like `submit`.
   */
  storeCheckedAhead(vote: Vote): Promise<VoteOutcome | 'forged'> | null {
    if (!this.ahead || this.inFlight > 1 || this.pending.length > 0 || this.scheduled || this.nowMs() < this.aheadPausedUntilMs) return null;
    const check = this.ahead.begin(vote);
    return check ? this.storeWhileChecking(vote, check) : null;
  }

  private async storeWhileChecking(vote: Vote, check: AheadCheck): Promise<VoteOutcome | 'forged'> {
    const storeOne = this.storeOneStep;
    let stored: StoredVote & { emitted: Vote[] };
    try {
      stored = await this.store.tx(function* () {
        const outcome = yield* storeOne(vote);
        // Read at the end, inside the transaction: a forged vote's writes go with its rollback.
        if (!check.verdict()) throw FORGED;
        return outcome;
      });
    } catch (error) {
      // Any failure of a forged vote is answered as its signature: checked first, it would never have been stored.
      if (error !== FORGED && check.verdict()) throw error;
      this.checkedAhead.forged++;
      this.aheadPausedUntilMs = this.nowMs() + CHECK_AHEAD_PAUSE_MS;
      return 'forged';
    }
    this.checkedAhead.stored++;
    return { ...stored, bulletin: await this.store.plain(this.voting.bulletin(vote.item, this.selfNodeId)) };
  }

  /** Stores a verified vote (its voter registered) and re-tallies the relay node; settles after the commit. */
  submit(vote: Vote): Promise<VoteOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ vote, resolve, reject });
      if (this.inFlight <= 1 && !this.scheduled) void this.flush();
      else this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate: after the I/O callbacks already due, so requests parsed in this turn join the batch.
    setImmediate(() => void this.flush());
  }

  /** Stores a batch and answers its votes; never rejects (each vote's promise hears of its failure). */
  private async flush(): Promise<void> {
    this.scheduled = false;
    // Votes whose signatures are still being checked arrived with these: they join this batch
    // (`verify` schedules it when the last check ends), so concurrent clients share a transaction
    // and its sync instead of committing one by one (issue 30: at most 0.5 of each per vote).
    if (this.verifying > 0 && this.pending.length < MAX_BATCH) return;
    const batch = this.pending.splice(0, MAX_BATCH);
    if (this.pending.length > 0) this.schedule();
    const results: ({ ok: true; stored: StoredVote & { emitted: Vote[] } } | { ok: false; error: unknown })[] = [];
    const store = this.store;
    const storeOne = this.storeOneStep;
    try {
      await store.tx(function* () {
        // One vote alone needs no savepoint: if it fails, its transaction is all there is to undo.
        if (batch.length === 1) results.push({ ok: true, stored: yield* storeOne((batch[0] as { vote: Vote }).vote) });
        else
          for (const { vote } of batch) {
            try {
              // A savepoint: a vote that throws takes back only its own writes.
              results.push({ ok: true, stored: yield* store.savepoint(() => storeOne(vote)) });
            } catch (error) {
              // The database ended the whole transaction (a full disk): no later vote may run outside it.
              if (!store.inTransaction) throw error;
              results.push({ ok: false, error });
            }
          }
      });
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    // The relay node's bulletin after the commit is the same for every vote of the batch on an item: computed once (decision 0620).
    const bulletins = new Map<string, Promise<RelayBulletin>>();
    const bulletinOf = (itemId: string) => {
      let bulletin = bulletins.get(itemId);
      if (!bulletin) bulletins.set(itemId, (bulletin = this.store.plain(this.voting.bulletin(itemId, this.selfNodeId))));
      return bulletin;
    };
    await Promise.all(
      batch.map(async (entry, k) => {
        const result = results[k];
        if (!result) entry.reject(new Error('vote batch ended without an outcome for every vote'));
        else if (!result.ok) entry.reject(result.error);
        else {
          try {
            entry.resolve({ ...result.stored, bulletin: await bulletinOf(entry.vote.item) });
          } catch (error) {
            entry.reject(error);
          }
        }
      }),
    );
  }

  /**
   * `storeOne` for the transactions' generator functions, which have no `this`: made once, not per
   * vote (under tsx, whose esbuild keeps function names, each closure made also cost a
   * `defineProperty` of its name: decision 1160).
   */
  private readonly storeOneStep = (vote: Vote) => this.storeOne(vote);

  private *storeOne(vote: Vote): Steps<StoredVote & { emitted: Vote[] }> {
    const now = this.nowMs();
    const stored = yield* this.voting.storeVote(vote, null, now);
    // Another document of a stored statement may declare another slice: the relay node re-tallies too.
    return { ...stored, emitted: stored.stored || stored.keptAnotherDocument ? yield* this.voting.retallySelf(vote.item, now) : [] };
  }
}
