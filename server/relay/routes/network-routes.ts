import { isoFromMs } from '../../../core/clock.js';
import { Federation } from '../domain/federation.js';
import { claimKinds } from '../../../core/relay/claim.js';
import type { RelayDeps } from '../relay-deps.js';
import { EventFeed } from '../queries/event-feed.js';
import { NetworkReads } from '../queries/network-reads.js';
import { workedExamples } from '../queries/worked-examples.js';
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

/** Addresses of the human site, shared by /health and the site itself. */
export function pageAddresses(humanUrl: string): Record<string, string> {
  return { human: `${humanUrl}/`, agents: `${humanUrl}/agents`, agents_md: `${humanUrl}/AGENTS.md`, llms_txt: `${humanUrl}/llms.txt` };
}

/** Health, discovery, the event feed and federation. */
export function networkRoutes(deps: RelayDeps): RelayRoute[] {
  const network = new NetworkReads(deps);
  const feed = new EventFeed(deps);
  const reach = new Reach(deps);
  const self = { url: deps.baseUrl, node_id: deps.selfKey.nodeId };

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
      handle: () => workedExamples(deps),
    }),
    route({
      method: 'get',
      path: '/seeds',
      summary: 'Relays to start from: configured seeds and the peers this relay knows.',
      auth: 'none',
      since: '0.9.3',
      response: seedsSchema,
      handle: async () => ({ seeds: (await network.seeds()).map((url) => ({ url })), self }),
    }),
    route({
      method: 'get',
      path: '/network',
      summary: 'The network as this relay sees it: counts, this relay, its peers, and slice edges (who trusts whom).',
      auth: 'none',
      since: '0.9.3',
      response: networkSchema,
      handle: async () => {
        const seen = await network.network();
        return {
          relay: { ...self, slice: seen.selfSlice ?? null },
          counts: seen.counts,
          peers: seen.peers.map((p) => Federation.view(p)),
          slices: seen.edges.map((e) => ({ node_id: e.node_id, slice_hash: e.hash, slice: JSON.parse(e.qset) as unknown })),
          pairs: seen.pairs,
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
        const page = await feed.page(query);
        return {
          events: page.events.map((e) => ({ seq: e.seq, kind: e.kind, author: e.author, subject: e.subject, origin: e.origin, created_at: isoFromMs(e.created_ms), data: e.data })),
          next: page.next,
          has_more: page.hasMore,
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
      handle: async () => ({ self, relays: (await network.peers()).map((p) => ({ url: p.url, node_id: p.node_id, version: p.version })) }),
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
      handle: async () => ({ peers: (await network.peers()).map((p) => Federation.view(p)) }),
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
