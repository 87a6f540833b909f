import { CLAIM_TITLE_MAX_CODE_POINTS } from './claim.js';
import { type Problem, type Validated, isPlainObject, notAnObject, unwrap } from './problem.js';
import { FieldChecks, signStatement, verifyStatement } from './signed-statement.js';

/**
 * x.item/1: an author's signed statement that it authored an item. The relay that stores an item
 * keeps it and serves it with the item (and in the item's event), so every other relay can check
 * the authorship against the author's key instead of taking a peer's word for it: a relay cannot
 * forge it, since it does not hold the author's key.
 *
 * ```
 * { "schema": "x.item/1", "item": <item id>, "type": "claim" | "file", "author": <node_id>,
 *   "title": <file title>, "media_type": <file media type>,   (files only; claims have neither)
 *   "sig": <Ed25519 by author over the RFC 8785 bytes without sig> }
 * ```
 * A claim's id already covers its kind, title and body; a file's id covers only its bytes, so a
 * file's statement also signs the title and media type it is shown with.
 */
export const ITEM_AUTHORSHIP_SCHEMA = 'x.item/1';

/** Media types are bounded like titles; the relay stores `type/subtype` in lower case, no parameters. */
export const MEDIA_TYPE_MAX_CHARS = 200;

export type ItemAuthorship =
  | { schema: typeof ITEM_AUTHORSHIP_SCHEMA; item: string; type: 'claim'; author: string; sig: string }
  | { schema: typeof ITEM_AUTHORSHIP_SCHEMA; item: string; type: 'file'; author: string; title: string; media_type: string; sig: string };

/** An authorship statement before signing. */
export type UnsignedItemAuthorship = ItemAuthorship extends infer T ? (T extends ItemAuthorship ? Omit<T, 'sig'> : never) : never;

const KNOWN = new Set(['schema', 'item', 'type', 'author', 'title', 'media_type', 'sig']);

/** Parses an untrusted x.item/1 document (the signature is NOT checked: `verifyItemAuthorship`). */
export function parseItemAuthorship(input: unknown): Validated<ItemAuthorship> {
  if (!isPlainObject(input)) return { ok: false, problems: [notAnObject([], input)] };
  const f = new FieldChecks(input);
  f.literal('schema', [ITEM_AUTHORSHIP_SCHEMA]);
  f.hex64('item', 'an item id, SHA-256 hex');
  f.literal('type', ['claim', 'file']);
  f.hex64('author', 'a node_id');
  if (input.type === 'file') {
    f.string('title', CLAIM_TITLE_MAX_CODE_POINTS);
    f.string('media_type', MEDIA_TYPE_MAX_CHARS);
  } else if (input.type === 'claim') {
    // A claim's title is in its id; a second copy here could only disagree with it.
    for (const key of ['title', 'media_type']) {
      if (f.has(key)) f.problems.push({ path: [key], code: 'extra', input: input[key], note: 'a claim id already covers its title' });
    }
  }
  f.signature();
  f.onlyKnown(KNOWN);
  if (f.problems.length > 0) return { ok: false, problems: f.problems };
  const base = { schema: ITEM_AUTHORSHIP_SCHEMA as typeof ITEM_AUTHORSHIP_SCHEMA, item: input.item as string, author: input.author as string, sig: input.sig as string };
  return {
    ok: true,
    value: input.type === 'file' ? { ...base, type: 'file', title: input.title as string, media_type: input.media_type as string } : { ...base, type: 'claim' },
  };
}

/** True when `doc.sig` is the author's signature over the statement. */
export function verifyItemAuthorship(doc: ItemAuthorship): boolean {
  return verifyStatement(doc as unknown as Record<string, unknown>, doc.author);
}

/** Signs an authorship statement with the author's 32-byte seed (throws for another node's key or a malformed statement). */
export function signItemAuthorship(unsigned: UnsignedItemAuthorship, secretKey: Uint8Array): ItemAuthorship {
  const signed = signStatement(unsigned as unknown as Record<string, unknown>, secretKey, unsigned.author);
  return unwrap(parseItemAuthorship(signed), 'item authorship');
}

/** The item as a relay shows it: what an authorship statement must agree with. */
export interface AuthoredItem {
  id: string;
  type: 'claim' | 'file';
  author: string;
  title: string;
  media_type: string | null;
}

/**
 * What in `doc` says another item than `item` (another id, type or author, or a file's title or
 * media type other than the item's), or null when it is `item`'s statement. The signature is
 * checked apart.
 */
export function authorshipMismatch(doc: ItemAuthorship, item: AuthoredItem): Problem | null {
  if (doc.item !== item.id) return { path: ['item'], code: 'not_posted_item', input: doc.item };
  if (doc.type !== item.type) return { path: ['type'], code: 'not_item_type', input: doc.type, expected: item.type };
  if (doc.author !== item.author) return { path: ['author'], code: 'not_posting_author', input: doc.author };
  if (doc.type === 'file' && doc.title !== item.title) return { path: ['title'], code: 'not_stored_title', input: doc.title, expected: item.title };
  if (doc.type === 'file' && doc.media_type !== item.media_type) return { path: ['media_type'], code: 'not_stored_media_type', input: doc.media_type, expected: item.media_type };
  return null;
}
