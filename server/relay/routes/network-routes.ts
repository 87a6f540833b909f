import { isoFromMs } from '../../../core/clock.js';
import { Federation } from '../domain/federation.js';
import { claimId, claimKinds } from '../../../core/relay/claim.js';
import { generateNodeKey, isNodeId } from '../../../core/relay/node-id.js';
import { quorumSetHash } from '../../../core/relay/quorum-set.js';
import { signItemAuthorship } from '../../../core/relay/item-authorship.js';
import { signSliceDeclaration } from '../../../core/relay/slice-declaration.js';
import { signVote } from '../../../core/relay/vote.js';
import type { RelayDeps } from '../relay-deps.js';
import { invalidInputAt } from '../domain/relay-errors.js';
import { Reach } from '../use-cases/reach.js';
import {
  claimSchema,
  credentialFormats,
  publicLimits,
  registerSchema,
  relayLimits,
  relayProtocol,
  relayScheme,
  relayVersion,
  sessionSchema,
  voteSchema,
} from '../../../wire/relay/relay-facts.js';
import { eventsPageSchema, examplesSchema, healthSchema, networkSchema, peerAddedSchema, peersSchema, probeSchema, pullSchema, relaysSchema, seedsSchema } from '../../../wire/relay/network-responses.js';
import { type RelayRoute, route } from './relay-route.js';
import { eventsQuery, reachBody, reachProbeBody } from '../../../wire/relay/relay-schemas.js';
import type { EventRow } from '../../storage/relay/event-repository.js';
import type { Steps } from '../../storage/sql-steps.js';
import { readEventsPage } from '../domain/events-page.js';
import { signDocument } from '../domain/signed-document.js';

/** Addresses of the human site, shared by /health and the site itself. */
export function pageAddresses(humanUrl: string): Record<string, string> {
  return { human: `${humanUrl}/`, agents: `${humanUrl}/agents`, agents_md: `${humanUrl}/AGENTS.md`, llms_txt: `${humanUrl}/llms.txt` };
}

/** Health, discovery, the event feed and federation. */
export function networkRoutes(deps: RelayDeps): RelayRoute[] {
  /**
   * An event's data as served: what a peer needs to verify it. Events stored before signed
   * authorship and declarations say so with null; a statement naming its slice by hash carries the
   * quorum set, so a peer that never saw it can still tally it (it checks the hash).
   */
  const eventData = function* (kind: string, payload: Record<string, unknown>): Steps<Record<string, unknown>> {
    if (kind === 'item' && payload.item !== null && typeof payload.item === 'object') return { ...payload, item: { ...payload.item, authorship: (payload.item as { authorship?: unknown }).authorship ?? null } };
    if (kind === 'slice') return { ...payload, declaration: payload.declaration ?? null };
    const hash = kind === 'vote' ? (payload.vote as { slice_hash?: unknown } | undefined)?.slice_hash : undefined;
    if (typeof hash !== 'string') return payload;
    const slice = yield* deps.voting.quorumSetByHash(hash);
    return slice ? { ...payload, slice } : payload;
  };

  const data = deps.store.plainData;
  const reach = new Reach(deps);

  return [
    route({
      method: 'get',
      path: '/health',
      summary: 'Version, protocol, scheme, this relay node, limits, credential formats and page addresses.',
      auth: 'none',
      since: '0.9.3',
      response: healthSchema,
      handle: () => ({
        status: 'ok',
        version: relayVersion,
        protocol: relayProtocol,
        scheme: relayScheme,
        schemas: { claim: claimSchema, vote: voteSchema, register: registerSchema, session: sessionSchema },
        node_id: deps.selfKey.nodeId,
        base_url: deps.baseUrl,
        time: isoFromMs(deps.clock.nowMs()),
        claim_kinds: [...claimKinds],
        limits: publicLimits(),
        credentials: credentialFormats,
        pages: pageAddresses(deps.humanUrl),
        openapi: `${deps.baseUrl}/openapi.json`,
      }),
    }),
    route({
      method: 'get',
      path: '/examples',
      summary: 'Worked examples: a claim with its id and its author\'s signed x.item/1 statement, a registration document, a signed vote and a signed x.slice/1 declaration (made with a throwaway key; they verify).',
      auth: 'none',
      since: '0.9.3',
      response: examplesSchema,
      handle: () => {
        const key = generateNodeKey();
        const claim = { kind: 'measurement', title: 'UART0 prints at 115200 baud on the pico bench', body: 'Measured with a logic analyser, 3 runs.' };
        const id = claimId(claim);
        const slice = { t: 1, v: [deps.selfKey.nodeId], i: [] };
        const createdAt = Math.floor(deps.clock.nowMs() / 1000);
        const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: key.nodeId, value: 'yes', phase: 'vote', slice, created_at: createdAt }, key.secretKey);
        return {
          claim: {
            request: { method: 'POST', path: '/items', body: { ...claim, authorship: signItemAuthorship({ schema: 'x.item/1', item: id, type: 'claim', author: key.nodeId }, key.secretKey) } },
            id,
            id_rule: 'sha256("x.claim/1\\n" + kind + "\\n" + title + "\\n" + body), hex',
            authorship_rule: "optional x.item/1 statement: Ed25519 by the author's node key over RFC 8785 canonical JSON without sig; without it the item stays on this relay",
          },
          registration: {
            request: { method: 'POST', path: '/register', body: signDocument({ schema: registerSchema, node_id: key.nodeId, relay: deps.baseUrl, created_at: createdAt, name: 'example' }, key.secretKey) },
            rule: 'Ed25519 by the node key over RFC 8785 canonical JSON of the document without sig; sig is unpadded base64url; created_at within ' + relayLimits.proofMaxSkewSeconds + ' s; relay is this base URL; each document works once',
          },
          vote: { request: { method: 'POST', path: `/items/${id}/vote`, body: { ...vote, hint: 'hint is not signed: relays may change it' } }, slice_hash: quorumSetHash(slice) },
          slice: { request: { method: 'POST', path: '/slice', body: { v: [deps.selfKey.nodeId] } }, rule: 'omit t for the default threshold (67 %, rounded up)' },
          declaration: {
            request: { method: 'POST', path: '/slice/declare', body: signSliceDeclaration({ node_id: key.nodeId, slice, updated_ms: deps.clock.nowMs() }, key.secretKey) },
            rule: 'x.slice/1: Ed25519 by the node key over RFC 8785 canonical JSON without sig; slice_hash is quorumSetHash(slice); the newest updated_ms (Unix ms) wins; peers forward and verify it',
          },
        };
      },
    }),
    route({
      method: 'get',
      path: '/seeds',
      summary: 'Relays to start from: configured seeds and the peers this relay knows.',
      auth: 'none',
      since: '0.9.3',
      response: seedsSchema,
      handle: async () => {
        const seeds = new Set<string>([...deps.seeds, ...(await deps.federation.peers()).map((p) => p.url)]);
        return { seeds: [...seeds].map((url) => ({ url })), self: { url: deps.baseUrl, node_id: deps.selfKey.nodeId } };
      },
    }),
    route({
      method: 'get',
      path: '/network',
      summary: 'The network as this relay sees it: counts, this relay, its peers, and slice edges (who trusts whom).',
      auth: 'none',
      since: '0.9.3',
      response: networkSchema,
      handle: async () => {
        const edges = await data.slices.edges(1000);
        return {
          relay: { url: deps.baseUrl, node_id: deps.selfKey.nodeId, slice: (await deps.store.plain(deps.voting.selfSlice())) ?? null },
          counts: {
            nodes: await data.nodes.count(),
            nodes_registered_here: await data.nodes.countLocal(),
            items: await data.items.count(),
            votes: await data.votes.count(),
            events: await data.events.count(),
            peers: await data.peers.count(),
          },
          peers: (await deps.federation.peers()).map((p) => Federation.view(p)),
          slices: edges.map((e) => ({ node_id: e.node_id, slice_hash: e.hash, slice: JSON.parse(e.qset) as unknown })),
          pairs: await data.social.pairs(1000),
        };
      },
    }),
    route({
      method: 'get',
      path: '/events',
      summary: `The event feed (node, item, vote, slice), oldest first. since = the next of the previous page (exclusive; 0 or absent = the start); authors = comma-separated node ids; limit <= ${relayLimits.eventsPageMax} (default ${relayLimits.eventsPageDefault}); a page stops short of limit (has_more true) before its events' data (as answered) pass ${relayLimits.eventsPagePayloadMaxBytes / (1024 * 1024)} MiB, and holds at least one event. Pages concatenate to the whole feed with no gap and no duplicate.`,
      auth: 'none',
      since: '0.9.3',
      response: eventsPageSchema,
      query: eventsQuery,
      handle: async ({ query }) => {
        const since = Number(query.since ?? 0);
        const limit = query.limit === undefined ? relayLimits.eventsPageDefault : Number(query.limit);
        // Pydantic's words for `Query(ge=1, le=max)`: one bound per error, the one that was crossed.
        if (limit < 1) throw invalidInputAt(['query'], [{ path: ['limit'], code: 'below_minimum', limit: 1, input: query.limit }]);
        if (limit > relayLimits.eventsPageMax) throw invalidInputAt(['query'], [{ path: ['limit'], code: 'above_maximum', limit: relayLimits.eventsPageMax, input: query.limit }]);
        const authors = query.authors === undefined || query.authors === '' ? [] : query.authors.split(',').map((a) => a.trim());
        if (authors.length > relayLimits.authorsFilterMax) {
          throw invalidInputAt(['query'], [{ path: ['authors'], code: 'too_many_items', limit: relayLimits.authorsFilterMax, input: query.authors }]);
        }
        authors.forEach((a, index) => {
          if (!isNodeId(a)) throw invalidInputAt(['query', 'authors', index], [{ path: [], code: 'not_author_id', input: a }]);
        });
        // Counted as answered: a vote naming its slice by hash carries the quorum set, which its
        // stored payload does not (up to 1000 node ids), so the stored text alone bounds nothing.
        const dataBySeq = new Map<number, Record<string, unknown>>();
        const bytesOf = function* (r: EventRow): Steps<number> {
          let answered = dataBySeq.get(r.seq);
          if (answered === undefined) {
            answered = yield* eventData(r.kind, JSON.parse(r.payload) as Record<string, unknown>);
            dataBySeq.set(r.seq, answered);
          }
          return Buffer.byteLength(JSON.stringify(answered), 'utf8');
        };
        // One rule: every event of the page was measured, so its data is in `dataBySeq`.
        const { rows: page, hasMore } = await deps.store.plain(readEventsPage(deps.store.data.events, since, authors, limit, deps.eventsPagePayloadMaxBytes, bytesOf));
        return {
          events: page.map((r) => ({ seq: r.seq, kind: r.kind, author: r.author, subject: r.subject, origin: r.origin, created_at: isoFromMs(r.created_ms), data: dataBySeq.get(r.seq)! })),
          next: page.at(-1)?.seq ?? since,
          has_more: hasMore,
        };
      },
    }),
    route({
      method: 'get',
      path: '/relays',
      summary: 'Peer relays this relay federates with.',
      auth: 'none',
      since: '0.9.19',
      response: relaysSchema,
      handle: async () => ({ self: { url: deps.baseUrl, node_id: deps.selfKey.nodeId }, relays: (await deps.federation.peers()).map((p) => ({ url: p.url, node_id: p.node_id, version: p.version })) }),
    }),
    route({
      method: 'post',
      path: '/reach',
      summary: 'Add a peer relay by its base URL (http or https). It is probed at the next /reach/probe or periodic probe. Operators only (403 for others, and for everyone when the relay names none); a host that is or resolves to a loopback, link-local or private address is refused with 403 unless the relay allows private peers.',
      auth: 'human',
      since: '0.9.19',
      response: peerAddedSchema,
      body: reachBody,
      successStatus: 201,
      handle: async ({ caller, body, res }) => {
        const { peer, created } = await reach.add(caller, body.url);
        if (!created) res.status(200);
        return { ...Federation.view(peer), created };
      },
    }),
    route({
      method: 'get',
      path: '/reach',
      summary: 'Reachability of every peer: last probe time, reachable, last error, feed cursor, events pulled and refused.',
      auth: 'none',
      since: '0.9.19',
      response: peersSchema,
      handle: async () => ({ peers: (await deps.federation.peers()).map((p) => Federation.view(p)) }),
    }),
    route({
      method: 'post',
      path: '/reach/probe',
      summary: 'Probe every peer now (or the one given) and pull its new events, verifying each before storing. Operators only (403 for others, and for everyone when the relay names none).',
      auth: 'human',
      since: '0.9.19',
      response: probeSchema,
      body: reachProbeBody,
      handle: async ({ caller, body }) => {
        return { results: await reach.probe(caller, body.url) };
      },
    }),
    route({
      method: 'post',
      path: '/federation/pull',
      summary: 'Pull from every peer now (or the one given) until caught up with its feed, verifying each event before storing it; answers what each peer gave. Operators only (403 for others, and for everyone when the relay names none). A hilbench extension: the periodic probe does the same on a timer.',
      auth: 'human',
      since: '0.9.19',
      response: pullSchema,
      body: reachProbeBody,
      handle: async ({ caller, body }) => {
        const results = await reach.pull(caller, body.url);
        return { results, pulled: results.reduce((n, r) => n + r.pulled, 0), caught_up: results.every((r) => r.caught_up) };
      },
    }),
  ];
}
