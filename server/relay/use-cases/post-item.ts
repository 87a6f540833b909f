import { type AuthoredItem, type ItemAuthorship, MEDIA_TYPE_MAX_CHARS, authorshipMismatch } from '../../../core/relay/item-authorship.js';
import { claimId, validateClaim } from '../../../core/relay/claim.js';
import type { Caller } from '../domain/credentials.js';
import type { RelayDeps } from '../relay-deps.js';
import { type UploadSource } from '../domain/file-store.js';
import { itemRecord } from '../domain/item-record.js';
import { RelayRefusal, invalidInputAt, parseOrRefuse } from '../domain/relay-errors.js';
import { requireAuthorship } from '../domain/signed-statements.js';
import { refuseUnstorableText } from '../domain/storable-text.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';
import type { Steps } from '../../storage/sql-steps.js';
import { claimBody, fileTitleField } from '../../../wire/relay/relay-schemas.js';

/** An item as stored, and whether this request stored it (ids are content addresses: posting again is no error). */
export interface PostedItem {
  row: ItemRow;
  created: boolean;
}

/**
 * POST /items: a claim (JSON) or a file (multipart), each with an optional x.item/1 statement of
 * its author. Checked whole before anything is stored; a refused upload leaves no file behind.
 */
export class PostItem {
  constructor(private readonly deps: RelayDeps) {}

  /** A claim `{kind, title, body, authorship?}` by the caller's node. */
  async claim(caller: Caller, input: unknown): Promise<PostedItem> {
    const author = authorOf(caller);
    parseOrRefuse(claimBody, input, 'body');
    const { authorship: statement, ...fields } = input as Record<string, unknown>;
    const checked = validateClaim({ body: '', ...fields });
    if (!checked.ok) throw invalidInputAt(['body'], checked.problems);
    const claim = checked.value;
    const id = claimId(claim);
    const described = await this.deps.store.plain(this.describedItem({ id, type: 'claim', author, title: claim.title, media_type: null }));
    const authorship = statement === undefined ? null : requireAuthorship(statement, described, ['body', 'authorship']);
    return this.insertItem({ item_id: id, type: 'claim', kind: claim.kind, title: claim.title, body: claim.body, file_bytes: null, media_type: null, author, bot_id: botOf(caller) }, authorship);
  }

  /** A file from a multipart/form-data body (`file`, optional `title` and `authorship`) by the caller's node. */
  async file(caller: Caller, source: UploadSource): Promise<PostedItem> {
    const author = authorOf(caller);
    // The title and the authorship statement are checked before the file is moved into the
    // store, so a refused upload leaves no file behind.
    let authorship: ItemAuthorship | null = null;
    const file = await this.deps.files.receiveMultipart(source, async (upload) => {
      refuseUnstorableText({ title: upload.title, ...Object.fromEntries(upload.fields) }, ['body']);
      const title = parseOrRefuse(fileTitleField, { title: upload.title }, 'body').title;
      // Stored and served back as the file's Content-Type: bounded like a signed one would be.
      if (upload.mediaType.length > MEDIA_TYPE_MAX_CHARS) {
        throw invalidInputAt(['body', 'file'], [{ path: [], code: 'media_type_too_long', limit: MEDIA_TYPE_MAX_CHARS, input: upload.mediaType.slice(0, 80) }]);
      }
      const described = await this.deps.store.plain(this.describedItem({ id: upload.itemId, type: 'file', author, title, media_type: upload.mediaType }));
      const statement = upload.fields.get('authorship');
      if (statement !== undefined) {
        let doc: unknown;
        try {
          doc = JSON.parse(statement);
        } catch {
          throw invalidInputAt(['body', 'authorship'], [{ path: [], code: 'authorship_not_json', input: statement }]);
        }
        authorship = requireAuthorship(doc, described, ['body', 'authorship']);
      }
      return title;
    });
    return this.insertItem({ item_id: file.itemId, type: 'file', kind: 'file', title: file.title, body: '', file_bytes: file.bytes, media_type: file.mediaType, author, bot_id: botOf(caller) }, authorship);
  }

  /**
   * The item an author's statement posted with `posted` must describe: the stored one when the
   * caller authored it (the statement is then served with it, and peers verify it against it, so a
   * statement of another title or media type would make this relay serve a false document), else
   * the posted one. Ids are content addresses, but a claim's text can also be posted as a file: an
   * id stored as the other type is refused, before a file is moved into the store.
   */
  private describedItem(posted: AuthoredItem): Steps<AuthoredItem> {
    const { items } = this.deps.store.data;
    return (function* () {
      const existing = yield* items.get(posted.id);
      if (!existing) return posted;
      if (existing.type !== posted.type) throw new RelayRefusal('item_type_conflict', `an item with id ${posted.id} is stored here as a ${existing.type}, not a ${posted.type}`);
      if (existing.author !== posted.author) return posted;
      return { id: existing.item_id, type: existing.type, author: existing.author, title: existing.title, media_type: existing.media_type };
    })();
  }

  /**
   * Stores a new item with its event; an existing id answers the stored item (ids are content
   * addresses). When the stored item is the caller's and was posted without the author's statement,
   * a statement given now is added and the item published again, so peers can take it from then on.
   * Checked again in the transaction (`describedItem`): another request may have stored the id since.
   */
  private insertItem(row: Omit<ItemRow, 'created_ms' | 'origin' | 'authorship'>, statement: ItemAuthorship | null): Promise<PostedItem> {
    const { store, clock } = this.deps;
    const { items } = store.data;
    const describedItem = (posted: AuthoredItem) => this.describedItem(posted);
    const now = () => clock.nowMs();
    return store.tx(function* () {
      const posted: AuthoredItem = { id: row.item_id, type: row.type, author: row.author, title: row.title, media_type: row.media_type };
      const described = yield* describedItem(posted);
      const mismatch = statement === null ? null : authorshipMismatch(statement, described);
      if (mismatch) throw invalidInputAt(['body', 'authorship'], [mismatch]);
      const authorship = statement === null ? null : JSON.stringify(statement);
      const existing = yield* items.get(row.item_id);
      if (existing) {
        if (authorship === null || !(yield* items.attachAuthorship(row.item_id, row.author, authorship))) return { row: existing, created: false };
        const signed = (yield* items.get(row.item_id))!;
        yield* store.appendEvent('item', signed.author, signed.item_id, { item: itemRecord(signed) }, now());
        return { row: signed, created: false };
      }
      yield* items.insert({ ...row, authorship, origin: null, created_ms: now() });
      const stored = (yield* items.get(row.item_id))!;
      yield* store.appendEvent('item', row.author, row.item_id, { item: itemRecord(stored) }, now());
      return { row: stored, created: true };
    });
  }
}

/** The node an item is posted for (a bot posts for its node). */
function authorOf(caller: Caller): string {
  if (caller.kind === 'anonymous') throw new Error('an item is posted by a node or its bot; the route table and the use case disagree');
  return caller.nodeId;
}

function botOf(caller: Caller): string | null {
  return caller.kind === 'bot' ? caller.botId : null;
}
