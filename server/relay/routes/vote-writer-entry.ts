import type { Clock } from '../../../core/clock.js';
import type { NodeKey } from '../../../core/relay/node-id.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { RelayStore } from '../relay-store.js';
import type { DefaultSliceSources } from '../domain/self-voter.js';
import { VoteWriter } from '../domain/vote-writer.js';
import type { Voting } from '../domain/voting.js';

/** The vote writer thread's entry (decision 0921): `.js` in the built package, `.ts` under tsx or vitest; beside the vote route, whose view it answers with. */
export const voteWriterEntry = new URL(`./post-vote-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/**
 * On SQLite, the relay's vote writer: votes checked and written on a thread of their own (decision
 * 0921); undefined on PostgreSQL, which keeps them on the event loop. Its thread started from `voteWriterEntry`: the
 * event loop's `voting` forgets the items the thread's commits changed, and everything it cached
 * when a thread ends (it may have committed votes it never answered).
 */
export function voteWriterFor(options: {
  clock: Clock;
  dataDir: string;
  databaseUrl?: string | undefined;
  store: RelayStore;
  voting: Voting;
  selfKey: NodeKey;
  selfSlice?: QuorumSet | undefined;
  defaultSliceFrom: DefaultSliceSources;
  log: (message: string, cause: unknown) => void;
}): VoteWriter | undefined {
  if (options.databaseUrl) return undefined;
  const { clock, dataDir, store, voting, selfKey, selfSlice, defaultSliceFrom, log } = options;
  return new VoteWriter({
    clock,
    entry: voteWriterEntry,
    dataDir,
    commitCounter: () => store.commitCounter(),
    selfSecretKey: selfKey.secretKey,
    defaultSliceFrom,
    ...(selfSlice ? { selfSlice } : {}),
    onChanged: (itemIds) => voting.forgetItems(itemIds),
    onThreadLost: () => voting.forgetCached(),
    log,
  });
}
