/**
 * File contents every replica can read (the relay's PostgreSQL store, decision 0440). A file's id
 * is the SHA-256 of its content, so a copy on one replica's disk never goes stale.
 */
export interface SharedFileContents {
  has(itemId: string): Promise<boolean>;
  /** Stores the content unless it is stored already. */
  put(itemId: string, content: Buffer): Promise<void>;
  get(itemId: string): Promise<Buffer | undefined>;
}
