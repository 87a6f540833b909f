/** Who may join the waitlist (the form's choices and the table's constraint). */
export const WAITLIST_KINDS = ['person', 'team', 'agent'] as const;
export type WaitlistKind = (typeof WAITLIST_KINDS)[number];

/** One person, team or agent that asked to be told when the bench opens up. */
export interface WaitlistEntry {
  /** Normalised address (see email-address.ts); unique. */
  email: string;
  kind: WaitlistKind;
  note: string;
  /** Host milliseconds since the epoch, from the injected clock, when the address first joined. */
  joinedAtMs: number;
}

export interface WaitlistAddResult {
  /** False when the address was already on the list; the stored entry is then left unchanged. */
  created: boolean;
}

/** The waitlist of the pages, kept by the bench store (`BenchStore.waitlist`), in SQLite or PostgreSQL. */
export interface WaitlistStore {
  /** Adds an entry unless its email is already present (first join wins). Committed before it resolves. */
  add(entry: WaitlistEntry): Promise<WaitlistAddResult>;
  /** Number of entries on the list. */
  count(): Promise<number>;
  /** The newest entries first, at most `limit` of them; for the operator (admin view, export). */
  list(options: { limit: number }): Promise<WaitlistEntry[]>;
}

/** Checks an entry before any store keeps it (callers pass a normalised, validated one). */
export function checkWaitlistEntry(entry: WaitlistEntry): void {
  if (!(WAITLIST_KINDS as readonly string[]).includes(entry.kind)) throw new RangeError(`unknown waitlist kind ${JSON.stringify(entry.kind)}`);
  if (!Number.isSafeInteger(entry.joinedAtMs)) throw new RangeError(`joinedAtMs must be an integer, got ${entry.joinedAtMs}`);
}
