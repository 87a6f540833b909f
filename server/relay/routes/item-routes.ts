import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, Response } from 'express';
import { isoFromMs } from '../../../core/clock.js';
import type { Caller } from '../domain/credentials.js';
import type { RelayDeps } from '../relay-deps.js';
import { HttpError } from '../../http/http-error.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { bulletinSchema, itemCreatedSchema, itemDetailSchema, itemsPageSchema, reportSchema, reportsSchema, sliceAnswerSchema, voteAnswerSchema } from '../../../wire/relay/item-responses.js';
import { type RelayRoute, alreadySent, callerNode, route } from './relay-route.js';
import { claimBody, fileUploadForm, itemsQuery, quorumSetSchema, reportBody, sliceMemberBody, voteDocSchema } from '../../../wire/relay/relay-schemas.js';
import type { ItemRow } from '../../storage/relay/item-repository.js';
import { bulletinView, itemView } from '../views/item-view.js';
import { ItemReads } from '../queries/item-reads.js';
import { PostItem, type PostedItem } from '../use-cases/post-item.js';
import { PostVote, type PostedVote } from '../use-cases/post-vote.js';
import { Report } from '../use-cases/report.js';
import { Slice } from '../use-cases/slice.js';

/** Whether a GET of a file item asks for its bytes rather than its JSON description. */
function wantsBytes(req: Request): boolean {
  return req.accepts(['application/json', 'application/octet-stream']) === 'application/octet-stream' && !req.headers.accept?.includes('application/json');
}

/** Sends a file item's bytes; the answer is written here, so the handler returns `alreadySent`. */
function sendFile(res: Response, row: ItemRow, file: { contentLength: number; content: Readable }, log: RelayDeps['log']): typeof alreadySent {
  // The media type is the uploader's: a browser opening the link must not run an uploaded
  // text/html or SVG on the relay's origin, so the answer is a sandboxed attachment.
  res.status(200).set({
    'content-type': row.media_type ?? 'application/octet-stream',
    'content-length': String(file.contentLength),
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': `attachment; filename="${row.item_id}"`,
  });
  // pipeline, not pipe: a read error must end the response, not crash the process.
  pipeline(file.content, res).catch((cause: unknown) => {
    // A client that hangs up mid-download is not a server fault.
    if ((cause as { code?: unknown }).code !== 'ERR_STREAM_PREMATURE_CLOSE') log(`relay: sending file ${row.item_id} failed`, cause);
  });
  return alreadySent;
}

/** Items, votes, bulletins, slices and reports. */
export function itemRoutes(deps: RelayDeps): RelayRoute[] {
  const relayNodeId = deps.selfKey.nodeId;
  const items = new ItemReads(deps);
  const postItem = new PostItem(deps);
  const postVote = new PostVote(deps);
  const { counts } = deps;
  const reports = new Report(deps);
  const slices = new Slice(deps);
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
        const { rows, next } = await items.page(query);
        return { items: rows.map((r) => itemView(r)), next };
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
        const row = await items.item(params.id!);
        if (row.type === 'file' && wantsBytes(req)) return sendFile(res, row, await items.fileContent(row), deps.log);
        const { bulletin, reports } = await items.tallies(row);
        return itemView(row, { counts: bulletin.counts, reports, relay_bulletin: bulletinView(bulletin, relayNodeId, row.item_id) });
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
        let posted: PostedVote;
        try {
          posted = await postVote.run(itemId, req.body, res);
        } catch (err) {
          counts.voteRefused(err);
          throw err;
        }
        const { vote, outcome } = posted;
        // One increment (relay-counts.ts): the vote path pays nothing more for /metrics.
        counts.voteTaken(outcome);
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
          relay_bulletin: bulletinView(bulletin, relayNodeId, itemId),
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
        const { item, bulletin } = await items.bulletin(params.id!, params.node!);
        return bulletinView(bulletin, params.node!, item.item_id);
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
        const { createdMs, ...report } = await reports.file(callerNode(caller), botOf(caller), params.id!, body);
        return { ...report, created_at: isoFromMs(createdMs) };
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
        const rows = await items.reportsOf(callerNode(caller));
        return { reports: rows.map((r) => ({ item: r.item_id, reason: r.reason, note: r.note, bot_id: r.bot_id, created_at: isoFromMs(r.created_ms) })) };
      },
    }),
  ];
}
