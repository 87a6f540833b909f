import { pipeline } from 'node:stream/promises';
import { isoFromMs } from '../../../core/clock.js';
import type { Caller } from '../domain/credentials.js';
import { type AuthoredItem, type ItemAuthorship, MEDIA_TYPE_MAX_CHARS, authorshipMismatch } from '../../../core/relay/item-authorship.js';
import { claimId, isItemId, validateClaim } from '../../../core/relay/claim.js';
import { isNodeId } from '../../../core/relay/node-id.js';
import { parseVote, type Vote } from '../../../core/relay/vote.js';
import { type RelayDeps, unixSeconds, voteTimeProblem } from '../relay-deps.js';
import { HttpError } from '../../http/http-error.js';
import { parseOr422 } from '../../http/http-error.js';
import { refuseUnstorableText } from '../domain/storable-text.js';
import { invalidInput } from './relay-error.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { bulletinSchema, itemCreatedSchema, itemDetailSchema, itemsPageSchema, reportSchema, reportsSchema, sliceAnswerSchema, voteAnswerSchema } from '../../../wire/relay/item-responses.js';
import { type RelayRoute, alreadySent, callerNode, route } from './relay-route.js';
import { claimBody, fileTitleField, fileUploadForm, itemsQuery, quorumSetSchema, reportBody, sliceMemberBody, voteDocSchema } from '../../../wire/relay/relay-schemas.js';
import { throwCoreProblems } from '../domain/signed-document.js';
import { requireAuthorship } from '../domain/signed-statements.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';
import type { Steps } from '../../storage/sql-steps.js';
import { VoteIngest } from '../domain/vote-ingest.js';
import { bulletinView, itemView } from '../views/item-view.js';
import { unknownSliceHash } from '../domain/statement-log.js';

export type { ItemRow };

/** Items, votes, bulletins, slices and reports. */
export function itemRoutes(deps: RelayDeps): RelayRoute[] {
  const store = deps.store;
  const { items } = store.data;
  const plain = store.plainData;
  const now = () => deps.clock.nowMs();
  const ingest = new VoteIngest(store, deps.voting, deps.selfKey.nodeId, now);
  const checkItemId = (id: string, where = 'id') => {
    if (!isItemId(id)) throw invalidInput(['path', where], 'Value error, item id must be 64 lowercase hex characters (a SHA-256 digest)', id);
  };
  const mustGetItem = async (id: string) => {
    checkItemId(id);
    const row = await plain.items.get(id);
    if (!row) throw new HttpError(404, 'no such item on this relay');
    return row;
  };
  const botOf = (caller: Caller) => (caller.kind === 'bot' ? caller.botId : null);

  /**
   * The item an author's statement posted with `posted` must describe: the stored one when the
   * caller authored it (the statement is then served with it, and peers verify it against it, so a
   * statement of another title or media type would make this relay serve a false document), else
   * the posted one. Ids are content addresses, but a claim's text can also be posted as a file: an
   * id stored as the other type is a 409, answered before a file is moved into the store.
   */
  const describedItem = function* (posted: AuthoredItem): Steps<AuthoredItem> {
    const existing = yield* items.get(posted.id);
    if (!existing) return posted;
    if (existing.type !== posted.type) throw new HttpError(409, `an item with id ${posted.id} is stored here as a ${existing.type}, not a ${posted.type}`);
    if (existing.author !== posted.author) return posted;
    return { id: existing.item_id, type: existing.type, author: existing.author, title: existing.title, media_type: existing.media_type };
  };

  /**
   * Stores a new item with its event; an existing id answers the stored item (ids are content
   * addresses). When the stored item is the caller's and was posted without the author's statement,
   * a statement given now is added and the item published again, so peers can take it from then on.
   * Checked again in the transaction (`describedItem`): another request may have stored the id since.
   */
  const insertItem = (row: Omit<ItemRow, 'created_ms' | 'origin' | 'authorship'>, statement: ItemAuthorship | null): Promise<{ row: ItemRow; created: boolean }> =>
    store.tx(function* () {
      const posted: AuthoredItem = { id: row.item_id, type: row.type, author: row.author, title: row.title, media_type: row.media_type };
      const described = yield* describedItem(posted);
      const mismatch = statement === null ? null : authorshipMismatch(statement, described);
      if (mismatch) throwCoreProblems([mismatch], ['body', 'authorship']);
      const authorship = statement === null ? null : JSON.stringify(statement);
      const existing = yield* items.get(row.item_id);
      if (existing) {
        if (authorship === null || !(yield* items.attachAuthorship(row.item_id, row.author, authorship))) return { row: existing, created: false };
        const signed = (yield* items.get(row.item_id))!;
        yield* store.appendEvent('item', signed.author, signed.item_id, { item: itemView(signed) }, now());
        return { row: signed, created: false };
      }
      yield* items.insert({ ...row, authorship, origin: null, created_ms: now() });
      const stored = (yield* items.get(row.item_id))!;
      yield* store.appendEvent('item', row.author, row.item_id, { item: itemView(stored) }, now());
      return { row: stored, created: true };
    });

  const sliceChange = (caller: Caller, change: (current: { v: string[]; i: unknown[]; t?: number } | undefined) => unknown) => {
    const nodeId = callerNode(caller);
    const voting = deps.voting;
    return store.tx(function* () {
      const current = yield* voting.publishedSlice(nodeId);
      const next = change(current ? { ...current.qset, ...(current.t_auto ? { t: undefined } : {}) } : undefined);
      const { qset, tAuto } = voting.parseSlice(stripUndefined(next), nodeId, ['body']);
      const saved = yield* voting.setSlice(nodeId, qset, tAuto, now());
      return { node_id: nodeId, slice_hash: saved.hash, slice: saved.qset, t_auto: tAuto };
    });
  };

  return [
    route({
      method: 'get',
      path: '/items',
      summary: 'Items, newest first, 100 per page; pass the answer\'s next as after for the next page.',
      auth: 'none',
      since: '0.9.3',
      response: itemsPageSchema,
      query: itemsQuery,
      handle: async ({ query }) => {
        const limit = Math.min(Number(query.limit ?? 100) || 100, 500);
        const after = query.after === undefined ? Number.MAX_SAFE_INTEGER : Number(query.after);
        const rows = await plain.items.page(after, query.author || undefined, limit);
        const last = rows.at(-1);
        return { items: rows.map((r) => itemView(r)), next: rows.length === limit && last ? last.cursor : null };
      },
    }),
    route({
      method: 'get',
      path: '/items/{id}',
      summary: 'One item with its vote counts and report count. For a file item, send Accept: application/octet-stream to get its bytes.',
      auth: 'none',
      since: '0.9.3',
      response: itemDetailSchema,
      // Accept: application/octet-stream: the bytes, under the media type they were uploaded with.
      alsoProduces: '*/*',
      handle: async ({ params, req, res }) => {
        const row = await mustGetItem(params.id!);
        if (row.type === 'file' && req.accepts(['application/json', 'application/octet-stream']) === 'application/octet-stream' && !req.headers.accept?.includes('application/json')) {
          if (!(await deps.files.has(row.item_id))) throw new HttpError(404, 'file content not stored on this relay');
          // Copied here first when another replica received it (`open` would do it too, after the headers).
          const contentLength = row.file_bytes ?? (await deps.files.sizeOf(row.item_id));
          const content = await deps.files.open(row.item_id);
          // The media type is the uploader's: a browser opening the link must not run an uploaded
          // text/html or SVG on the relay's origin, so the answer is a sandboxed attachment.
          res.status(200).set({
            'content-type': row.media_type ?? 'application/octet-stream',
            'content-length': String(contentLength),
            'content-security-policy': "default-src 'none'; sandbox",
            'content-disposition': `attachment; filename="${row.item_id}"`,
          });
          // pipeline, not pipe: a read error must end the response, not crash the process.
          pipeline(content, res).catch((cause: unknown) => {
            // A client that hangs up mid-download is not a server fault.
            if ((cause as { code?: unknown }).code !== 'ERR_STREAM_PREMATURE_CLOSE') deps.log(`relay: sending file ${row.item_id} failed`, cause);
          });
          return alreadySent;
        }
        const bulletin = await store.plain(deps.voting.bulletin(row.item_id, deps.selfKey.nodeId));
        return itemView(row, { counts: bulletin.counts, reports: await plain.reports.countForItem(row.item_id), relay_bulletin: bulletinView(bulletin, deps.selfKey.nodeId, row.item_id) });
      },
    }),
    route({
      method: 'post',
      path: '/items',
      summary: `Post an item: a JSON claim {kind, title, body} or a multipart/form-data file (field file, optional title). Title <= ${relayLimits.titleMaxChars} and body <= ${relayLimits.bodyMaxChars} code points (422 beyond); file <= ${relayLimits.fileMaxBytes} bytes (413 beyond).`,
      auth: 'human-or-bot',
      since: '0.9.3',
      response: itemCreatedSchema,
      body: claimBody,
      bodyKind: 'json-or-multipart',
      multipart: fileUploadForm,
      successStatus: 201,
      handle: async ({ caller, req, res }) => {
        const author = callerNode(caller);
        if (req.is('multipart/form-data')) {
          // The title and the authorship statement are checked before the file is moved into the
          // store, so a refused upload leaves no file behind.
          let authorship: ItemAuthorship | null = null;
          const file = await deps.files.receiveMultipart(req, async (upload) => {
            refuseUnstorableText({ title: upload.title, ...Object.fromEntries(upload.fields) }, ['body']);
            const title = parseOr422(fileTitleField, { title: upload.title }, 'body').title;
            // Stored and served back as the file's Content-Type: bounded like a signed one would be.
            if (upload.mediaType.length > MEDIA_TYPE_MAX_CHARS) {
              throw invalidInput(['body', 'file'], `Value error, the file part's Content-Type is at most ${MEDIA_TYPE_MAX_CHARS} characters`, upload.mediaType.slice(0, 80), 'value_error', { max_length: MEDIA_TYPE_MAX_CHARS });
            }
            const described = await store.plain(describedItem({ id: upload.itemId, type: 'file', author, title, media_type: upload.mediaType }));
            const statement = upload.fields.get('authorship');
            if (statement !== undefined) {
              let doc: unknown;
              try {
                doc = JSON.parse(statement);
              } catch {
                throw invalidInput(['body', 'authorship'], 'Value error, authorship must be the x.item/1 statement as JSON text', statement, 'json_invalid');
              }
              authorship = requireAuthorship(doc, described, ['body', 'authorship']);
            }
            return title;
          });
          const { row, created } = await insertItem({ item_id: file.itemId, type: 'file', kind: 'file', title: file.title, body: '', file_bytes: file.bytes, media_type: file.mediaType, author, bot_id: botOf(caller) }, authorship);
          if (!created) res.status(200);
          return itemView(row, { created });
        }
        if (!req.is('application/json')) throw new HttpError(415, 'send a claim as application/json or a file as multipart/form-data');
        const input: unknown = req.body;
        parseOr422(claimBody, input, 'body');
        const { authorship: statement, ...fields } = input as Record<string, unknown>;
        const checked = validateClaim({ body: '', ...fields });
        if (!checked.ok) throwCoreProblems(checked.problems, ['body']);
        const claim = checked.value;
        const id = claimId(claim);
        const described = await store.plain(describedItem({ id, type: 'claim', author, title: claim.title, media_type: null }));
        const authorship = statement === undefined ? null : requireAuthorship(statement, described, ['body', 'authorship']);
        const { row, created } = await insertItem({ item_id: id, type: 'claim', kind: claim.kind, title: claim.title, body: claim.body, file_bytes: null, media_type: null, author, bot_id: botOf(caller) }, authorship);
        if (!created) res.status(200);
        return itemView(row, { created });
      },
    }),
    route({
      method: 'post',
      path: '/items/{id}/vote',
      summary: 'Post a signed x.vote/1 statement (Ed25519 over RFC 8785 bytes without sig and hint). Duplicates are idempotent; equivocations are kept as evidence. The relay node then re-tallies and emits its own statements.',
      auth: 'signature',
      since: '0.9.3',
      response: voteAnswerSchema,
      body: voteDocSchema,
      bodyKind: 'core',
      successStatus: 201,
      handle: ({ params, req, res }) => ingest.request(res, async () => {
        const itemId = params.id!;
        checkItemId(itemId);
        // Only whether it exists: the vote's answer needs nothing else of the item's row.
        if (!(await ingest.itemStored(itemId))) throw new HttpError(404, 'no such item on this relay');
        const parsed = parseVote(req.body);
        if (!parsed.ok) throwCoreProblems(parsed.problems, ['body']);
        const vote: Vote = parsed.value;
        if (vote.item !== itemId) throw invalidInput(['body', 'item'], 'Value error, item must equal the id in the path', vote.item);
        const timeProblem = voteTimeProblem(vote.created_at, now());
        if (timeProblem !== null) throw invalidInput(['body', 'created_at'], `Value error, ${timeProblem}`, vote.created_at, 'value_error', { now: unixSeconds(now()) });
        // On the thread pool, before the write path: concurrent clients' signatures are checked in parallel.
        // Looked up once, before the check (a vote sent while its voter registers may be either side of it).
        const voter = { registered: await ingest.voterRegistered(vote.voter) };
        if (!(await ingest.verify(vote, voter))) throw invalidInput(['body', 'sig'], 'Value error, sig is not the voter\'s Ed25519 signature over this vote', vote.sig);
        if (!voter.registered) throw new HttpError(403, 'voter is not a registered node: POST /register first');
        if (vote.slice_hash !== undefined && !(await store.plain(deps.voting.quorumSetByHash(vote.slice_hash)))) {
          // Checked here as well as where it is stored: a refusal never reaches the write path.
          throw unknownSliceHash(vote.slice_hash);
        }
        const outcome = await ingest.submit(vote);
        if (!outcome.stored) res.status(200);
        const bulletin = outcome.bulletin;
        return {
          item: itemId,
          voter: vote.voter,
          value: vote.value,
          phase: vote.phase,
          stored: outcome.stored,
          duplicate: outcome.duplicate,
          equivocation: outcome.equivocation,
          relay_emitted: outcome.emitted.map((v) => ({ value: v.value, phase: v.phase })),
          relay_bulletin: bulletinView(bulletin, deps.selfKey.nodeId, itemId),
        };
      }),
    }),
    route({
      method: 'get',
      path: '/items/{id}/bulletin/{node}',
      summary: "A node's scp-s5 bulletin for an item as this relay computes it from every stored statement: state, value, counts per value and phase, accepted_via, equivocators, slice_hash, and to_emit (what that node should sign next).",
      auth: 'none',
      since: '0.9.3',
      response: bulletinSchema,
      handle: async ({ params }) => {
        const row = await mustGetItem(params.id!);
        const node = params.node!;
        if (!isNodeId(node)) throw invalidInput(['path', 'node'], 'Value error, node must be 64 lowercase hex characters', node);
        return bulletinView(await store.plain(deps.voting.bulletin(row.item_id, node)), node, row.item_id);
      },
    }),
    route({
      method: 'post',
      path: '/slice',
      summary: 'Publish your slice (quorum set {t, v, i}; omit t for the default 67 %). Sanity rules: 1 <= t <= entries, no node twice, depth <= 4, 1..1000 nodes, not yourself. Votes may then carry its slice_hash.',
      auth: 'human',
      since: '0.9.3',
      response: sliceAnswerSchema,
      body: quorumSetSchema,
      handle: ({ caller, body }) => sliceChange(caller, () => body),
    }),
    route({
      method: 'post',
      path: '/slice/include',
      summary: 'Add a validator to the top level of your slice (creating a 1-node slice if you had none).',
      auth: 'human',
      since: '0.9.3',
      response: sliceAnswerSchema,
      body: sliceMemberBody,
      handle: ({ caller, body }) =>
        sliceChange(caller, (current) => {
          if (!current) return { v: [body.node_id], i: [] };
          if (current.v.includes(body.node_id)) return current;
          return { ...current, v: [...current.v, body.node_id] };
        }),
    }),
    route({
      method: 'post',
      path: '/slice/exclude',
      summary: 'Remove a validator from the top level of your slice. Refused (422) when it would leave the slice empty or t above the entries.',
      auth: 'human',
      since: '0.9.3',
      response: sliceAnswerSchema,
      body: sliceMemberBody,
      handle: ({ caller, body }) =>
        sliceChange(caller, (current) => {
          if (!current || !current.v.includes(body.node_id)) throw invalidInput(['body', 'node_id'], 'Value error, this node is not a top-level validator of your slice', body.node_id);
          return { ...current, v: current.v.filter((v) => v !== body.node_id) };
        }),
    }),
    route({
      method: 'post',
      path: '/items/{id}/report',
      summary: 'Report an item (one report per node per item; reporting again updates it).',
      auth: 'human-or-bot',
      since: '0.9.19',
      response: reportSchema,
      body: reportBody,
      successStatus: 201,
      handle: async ({ caller, params, body }) => {
        const row = await mustGetItem(params.id!);
        const reporter = callerNode(caller);
        await plain.reports.upsert({ item_id: row.item_id, reporter, bot_id: botOf(caller), reason: body.reason, note: body.note, created_ms: now() });
        return { item: row.item_id, reporter, reason: body.reason, note: body.note, created_at: isoFromMs(now()) };
      },
    }),
    route({
      method: 'get',
      path: '/report',
      summary: 'Your reports (for a bot: the reports of the node it acts for), newest first.',
      auth: 'human-or-bot',
      since: '0.9.3',
      response: reportsSchema,
      handle: async ({ caller }) => {
        const rows = await plain.reports.byReporter(callerNode(caller));
        return { reports: rows.map((r) => ({ item: r.item_id, reason: r.reason, note: r.note, bot_id: r.bot_id, created_at: isoFromMs(r.created_ms) })) };
      },
    }),
  ];
}

function stripUndefined(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
