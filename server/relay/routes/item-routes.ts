import { pipeline } from 'node:stream/promises';
import { isoFromMs } from '../../../core/clock.js';
import type { Caller } from '../domain/credentials.js';
import type { RelayDeps } from '../relay-deps.js';
import { HttpError } from '../../http/http-error.js';
import { requireItemId, requireNodeId } from '../domain/id-checks.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { bulletinSchema, itemCreatedSchema, itemDetailSchema, itemsPageSchema, reportSchema, reportsSchema, sliceAnswerSchema, voteAnswerSchema } from '../../../wire/relay/item-responses.js';
import { type RelayRoute, alreadySent, callerNode, route } from './relay-route.js';
import { claimBody, fileUploadForm, itemsQuery, quorumSetSchema, reportBody, sliceMemberBody, voteDocSchema } from '../../../wire/relay/relay-schemas.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';
import { bulletinView, itemView } from '../views/item-view.js';
import { PostItem, type PostedItem } from '../use-cases/post-item.js';
import { PostVote } from '../use-cases/post-vote.js';
import { Slice } from '../use-cases/slice.js';

export type { ItemRow };

/** Items, votes, bulletins, slices and reports. */
export function itemRoutes(deps: RelayDeps): RelayRoute[] {
  const store = deps.store;
  const plain = store.plainData;
  const now = () => deps.clock.nowMs();
  const postItem = new PostItem(deps);
  const postVote = new PostVote(deps);
  const slices = new Slice(deps);
  const mustGetItem = async (id: string) => {
    requireItemId(id);
    const row = await plain.items.get(id);
    if (!row) throw new RelayRefusal('item_not_found', 'no such item on this relay');
    return row;
  };
  const botOf = (caller: Caller) => (caller.kind === 'bot' ? caller.botId : null);
  const created = (res: { status(code: number): unknown }, posted: PostedItem) => {
    if (!posted.created) res.status(200);
    return itemView(posted.row, { created: posted.created });
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
          if (!(await deps.files.has(row.item_id))) throw new RelayRefusal('file_content_missing', 'file content not stored on this relay');
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
        if (req.is('multipart/form-data')) return created(res, await postItem.file(caller, req));
        if (!req.is('application/json')) throw new HttpError(415, 'send a claim as application/json or a file as multipart/form-data');
        return created(res, await postItem.claim(caller, req.body));
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
      handle: async ({ params, req, res }) => {
        const itemId = params.id!;
        const { vote, outcome } = await postVote.run(itemId, req.body, res);
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
      },
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
        requireNodeId(node, 'node');
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
      handle: ({ caller, body }) => slices.change(callerNode(caller), () => body),
    }),
    route({
      method: 'post',
      path: '/slice/include',
      summary: 'Add a validator to the top level of your slice (creating a 1-node slice if you had none).',
      auth: 'human',
      since: '0.9.3',
      response: sliceAnswerSchema,
      body: sliceMemberBody,
      handle: ({ caller, body }) => slices.include(callerNode(caller), body.node_id),
    }),
    route({
      method: 'post',
      path: '/slice/exclude',
      summary: 'Remove a validator from the top level of your slice. Refused (422) when it would leave the slice empty or t above the entries.',
      auth: 'human',
      since: '0.9.3',
      response: sliceAnswerSchema,
      body: sliceMemberBody,
      handle: ({ caller, body }) => slices.exclude(callerNode(caller), body.node_id),
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
