import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { isoFromMs } from '../../../core/clock.js';
import { getNode, pairedWith, publicNode } from '../views/node-view.js';
import { maskPhone, normalizePhone } from '../domain/phone-codes.js';
import { isNodeId, nodeIdProblem } from '../../../core/relay/node-id.js';
import { type RelayDeps, unixSeconds } from '../relay-deps.js';
import { HttpError } from '../../http/http-error.js';
import { invalidInput } from './relay-error.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { botCreatedSchema, botSchema, codeRequestSchema, credentialAnswerSchema, directorySchema, exportSchema, lookupSchema, meNodeSchema, meSchema, nodeDetailSchema, nodesPageSchema, phoneVerifiedSchema, recoveredSchema, registerAnswerSchema, searchSchema } from '../../../wire/relay/identity-responses.js';
import { type RelayRoute, callerNode, route } from './relay-route.js';
import {
  botBody,
  directoryBody,
  lookupQuery,
  meUpdateBody,
  phoneBody,
  phoneCodeBody,
  registerBody,
  searchQuery,
  sessionBody,
} from '../../../wire/relay/relay-schemas.js';
import { verifySignedDocument } from '../domain/signed-document.js';
import { LookupLimiter } from '../domain/lookup-limiter.js';

/** Identities, credentials, phone numbers, bots, directory and search. */
export function identityRoutes(deps: RelayDeps): RelayRoute[] {
  const { nodes, phones, bots, items, votes } = deps.store.syncData;
  const lookupLimiter = new LookupLimiter(relayLimits.lookupsPerHour);
  const now = () => deps.clock.nowMs();

  /**
   * Checks a signed registration or session document: right relay, fresh, signed by the node it
   * names, never seen before. Burns the signature so a captured document cannot be replayed.
   */
  const checkProof = (doc: z.infer<typeof sessionBody> | z.infer<typeof registerBody>) => {
    const problem = nodeIdProblem(doc.node_id);
    if (problem) throw invalidInput(['body', 'node_id'], `Value error, ${problem}`, doc.node_id);
    if (doc.relay !== deps.baseUrl) {
      throw invalidInput(['body', 'relay'], `Value error, relay must be this relay's base URL ${deps.baseUrl}`, doc.relay, 'value_error', { expected: deps.baseUrl });
    }
    const skew = Math.abs(unixSeconds(now()) - doc.created_at);
    if (skew > relayLimits.proofMaxSkewSeconds) {
      throw invalidInput(['body', 'created_at'], `Value error, created_at is ${skew} s away from the relay clock (at most ${relayLimits.proofMaxSkewSeconds} s)`, doc.created_at, 'value_error', { now: unixSeconds(now()) });
    }
    if (!verifySignedDocument(doc, doc.node_id)) {
      throw invalidInput(['body', 'sig'], 'Value error, sig is not a signature of this document by node_id (Ed25519 over RFC 8785 bytes without sig)', doc.sig);
    }
    if (!nodes.burnProof(doc.sig, now())) throw new HttpError(409, 'this signed document was already used; sign a new one with a fresh created_at');
  };

  const credentialAnswer = (nodeId: string) => {
    const credential = deps.credentials.currentCredential(nodeId);
    return { node_id: nodeId, credential, authorization: `Bearer ${credential}` };
  };

  const phoneOf = (nodeId: string) => phones.ofNode(nodeId);
  const nodeOfPhone = (phone: string) => phones.nodeOf(phone);

  const meView = (nodeId: string) => {
    const row = getNode(deps, nodeId)!;
    const phone = phoneOf(nodeId);
    return {
      ...publicNode(deps, row),
      phone: phone ? maskPhone(phone.phone) : null,
      phone_discoverable: row.phone_discoverable === 1,
      credential_version: row.cred_version,
      paired_with: pairedWith(deps, nodeId),
    };
  };

  return [
    route({
      method: 'post',
      path: '/register',
      summary: 'Register a node: post an x.register/1 document signed by the node key; answers the human credential.',
      auth: 'signature',
      since: '0.9.3',
      response: registerAnswerSchema,
      body: registerBody,
      successStatus: 201,
      handle: ({ body, res }) => {
        const created = deps.store.tx(() => {
          checkProof(body);
          const existing = getNode(deps, body.node_id);
          const registration = JSON.stringify(body);
          if (existing) {
            // Registering again proves the key again: the node becomes local (if it was only known
            // from a peer) and gets its current credential; nothing is revoked.
            nodes.markLocal(body.node_id, body.name ?? null, now());
            return false;
          }
          nodes.insert({ nodeId: body.node_id, local: true, name: body.name ?? '', registration, nowMs: now() });
          deps.store.run(deps.store.appendEvent('node', body.node_id, body.node_id, { registration: body }, now()));
          return true;
        });
        if (!created) res.status(200);
        return { ...credentialAnswer(body.node_id), created };
      },
    }),
    route({
      method: 'post',
      path: '/session',
      summary: 'Sign in with the node key: post an x.session/1 document signed by it; answers the current human credential.',
      auth: 'signature',
      since: '0.9.3',
      response: credentialAnswerSchema,
      body: sessionBody,
      handle: ({ body }) => {
        deps.store.tx(() => {
          checkProof(body);
          if (getNode(deps, body.node_id)?.local !== 1) throw new HttpError(404, 'node not registered on this relay; POST /register first');
        });
        return credentialAnswer(body.node_id);
      },
    }),
    route({
      method: 'get',
      path: '/me',
      summary: 'The calling node (for a bot: the bot and the node it acts for).',
      auth: 'human-or-bot',
      since: '0.9.3',
      response: meSchema,
      handle: ({ caller }) => {
        const nodeId = callerNode(caller);
        const me = meView(nodeId);
        if (caller.kind === 'bot') return { caller: 'bot', bot_id: caller.botId, node: me };
        return { caller: 'human', node: me, bots: bots.activeOf(nodeId).map((b) => ({ bot_id: b.bot_id, name: b.name, created_at: isoFromMs(b.created_ms) })) };
      },
    }),
    route({
      method: 'post',
      path: '/me',
      summary: 'Update your name and about text (local to this relay, not federated).',
      auth: 'human',
      since: '0.9.3',
      response: meNodeSchema,
      body: meUpdateBody,
      handle: ({ caller, body }) => {
        const nodeId = callerNode(caller);
        nodes.updateProfile(nodeId, { name: body.name ?? null, about: body.about ?? null }, now());
        return meView(nodeId);
      },
    }),
    route({
      method: 'get',
      path: '/me/export',
      summary: 'Everything the caller owns on this relay, as one JSON document.',
      auth: 'human',
      since: '0.9.3',
      response: exportSchema,
      handle: ({ caller }) => exportOf(deps, callerNode(caller), phoneOf(callerNode(caller))?.phone ?? null),
    }),
    route({
      method: 'post',
      path: '/me/phone',
      summary: 'Start verifying a phone number for your node: a one-time code is sent to it.',
      auth: 'human',
      since: '0.9.3',
      response: codeRequestSchema,
      body: phoneBody,
      handle: async ({ caller, body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return deps.codes.start(phone, 'verify', callerNode(caller), { awaitDelivery: true });
      },
    }),
    route({
      method: 'post',
      path: '/me/phone/verify',
      summary: 'Finish verifying your phone number with the code. A number belongs to one node: proving it moves it.',
      auth: 'human',
      since: '0.9.3',
      response: phoneVerifiedSchema,
      body: phoneCodeBody,
      handle: ({ caller, body }) => {
        const nodeId = callerNode(caller);
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        deps.codes.redeem(phone, 'verify', body.code, { forNode: nodeId });
        deps.store.tx(() => phones.assign(phone, nodeId, now()));
        return { phone: maskPhone(phone), verified: true };
      },
    }),
    route({
      method: 'post',
      path: '/login',
      summary: 'Request a login code by SMS. The answer is the same whether or not the number is registered.',
      auth: 'none',
      since: '0.9.3',
      response: codeRequestSchema,
      body: phoneBody,
      handle: ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return deps.codes.start(phone, 'login', nodeOfPhone(phone), { awaitDelivery: false });
      },
    }),
    route({
      method: 'post',
      path: '/login/verify',
      summary: 'Exchange a login code for the current human credential.',
      auth: 'none',
      since: '0.9.3',
      response: credentialAnswerSchema,
      body: phoneCodeBody,
      handle: ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return credentialAnswer(deps.codes.redeem(phone, 'login', body.code));
      },
    }),
    route({
      method: 'post',
      path: '/recover/start',
      summary: 'Start account recovery: a code goes to the verified number. Same answer for unknown numbers.',
      auth: 'none',
      since: '0.9.19',
      response: codeRequestSchema,
      body: phoneBody,
      handle: ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return deps.codes.start(phone, 'recover', nodeOfPhone(phone), { awaitDelivery: false });
      },
    }),
    route({
      method: 'post',
      path: '/recover/finish',
      summary: 'Finish recovery with the code: every earlier human credential and every bot token of the node is revoked; answers a new credential.',
      auth: 'none',
      since: '0.9.19',
      response: recoveredSchema,
      body: phoneCodeBody,
      handle: ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        const nodeId = deps.codes.redeem(phone, 'recover', body.code);
        const revokedBots = deps.store.tx(() => {
          const n = bots.countActive(nodeId);
          deps.credentials.revokeAll(nodeId, now());
          return n;
        });
        return { ...credentialAnswer(nodeId), revoked: { earlier_credentials: true, bots: revokedBots } };
      },
    }),
    route({
      method: 'get',
      path: '/lookup',
      summary: `Find nodes by phone number. Only numbers whose owner opted in (POST /directory phone_discoverable) are found; every other number answers the same empty list. At most ${relayLimits.lookupsPerHour} lookups per hour per caller.`,
      auth: 'human',
      since: '0.9.3',
      response: lookupSchema,
      query: lookupQuery,
      handle: ({ caller, query }) => {
        const nodeId = callerNode(caller);
        const phone = normalizePhone(query.phone, ['query', 'phone']);
        const allowed = lookupLimiter.take(nodeId, now());
        if (!allowed.ok) {
          const retry = allowed.retryAfterSeconds;
          throw new HttpError(429, `at most ${relayLimits.lookupsPerHour} lookups per hour; retry after ${retry} s`, { 'Retry-After': String(retry) });
        }
        return { phone, nodes: phones.discoverableNodes(phone) };
      },
    }),
    route({
      method: 'post',
      path: '/bots',
      summary: `Create a bot that acts for your node; the token is shown once and stored hashed. At most ${relayLimits.botsPerNodeMax} bots per node.`,
      auth: 'human',
      since: '0.9.19',
      response: botCreatedSchema,
      body: botBody,
      successStatus: 201,
      handle: ({ caller, body }) => {
        const owner = callerNode(caller);
        const { token, tokenHash } = deps.credentials.issueBotToken();
        const botId = `bot_${randomBytes(9).toString('base64url')}`;
        deps.store.tx(() => {
          if (bots.countActive(owner) >= relayLimits.botsPerNodeMax) throw new HttpError(409, `a node may have at most ${relayLimits.botsPerNodeMax} bots`);
          bots.insert({ botId, owner, name: body.name, tokenHash, nowMs: now() });
        });
        return { bot_id: botId, name: body.name, owner, token, authorization: `Bot ${token}`, created_at: isoFromMs(now()) };
      },
    }),
    route({
      method: 'get',
      path: '/bots/me',
      summary: 'The calling bot.',
      auth: 'bot',
      since: '0.9.19',
      response: botSchema,
      handle: ({ caller }) => {
        if (caller.kind !== 'bot') throw new Error('unreachable: route requires a bot');
        const bot = bots.get(caller.botId)!;
        return { bot_id: bot.bot_id, name: bot.name, owner: bot.owner, created_at: isoFromMs(bot.created_ms) };
      },
    }),
    route({
      method: 'post',
      path: '/directory',
      summary: 'Choose whether you appear in /search (listed) and whether /lookup finds you by phone (phone_discoverable).',
      auth: 'human',
      since: '0.9.3',
      response: directorySchema,
      body: directoryBody,
      handle: ({ caller, body }) => {
        const nodeId = callerNode(caller);
        nodes.updateDirectory(nodeId, { listed: body.listed ?? null, phoneDiscoverable: body.phone_discoverable ?? null }, now());
        const row = getNode(deps, nodeId)!;
        return { node_id: nodeId, listed: row.listed === 1, phone_discoverable: row.phone_discoverable === 1 };
      },
    }),
    route({
      method: 'get',
      path: '/search',
      summary: `Search listed nodes (name, about) and items (title) for q; at most ${relayLimits.searchResultsMax} of each.`,
      auth: 'none',
      since: '0.9.3',
      response: searchSchema,
      query: searchQuery,
      handle: ({ query }) => {
        const like = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
        return {
          q: query.q,
          nodes: nodes.searchListed(like, relayLimits.searchResultsMax).map((n) => publicNode(deps, n)),
          items: items.searchTitles(like, relayLimits.searchResultsMax).map((i) => ({ id: i.item_id, type: i.type, kind: i.kind, title: i.title, author: i.author, created_at: isoFromMs(i.created_ms) })),
        };
      },
    }),
    route({
      method: 'get',
      path: '/nodes',
      summary: 'Nodes this relay knows (registered here or learned from peers), oldest first, at most 500.',
      auth: 'none',
      since: '0.9.3',
      response: nodesPageSchema,
      handle: () => {
        const rows = nodes.oldest(501);
        const total = nodes.count();
        return { nodes: rows.slice(0, 500).map((r) => publicNode(deps, r)), total, truncated: rows.length > 500 };
      },
    }),
    route({
      method: 'get',
      path: '/nodes/{id}',
      summary: 'One node: profile, published slice, pairings and activity counts.',
      auth: 'none',
      since: '0.9.3',
      response: nodeDetailSchema,
      handle: ({ params }) => {
        const id = params.id!;
        if (!isNodeId(id)) throw invalidInput(['path', 'id'], 'Value error, node id must be 64 lowercase hex characters', id);
        const row = getNode(deps, id);
        if (!row) throw new HttpError(404, 'no such node on this relay');
        const slice = deps.store.run(deps.voting.publishedSlice(id));
        const counts = {
          items: items.countByAuthor(id),
          votes: votes.countByVoter(id),
        };
        return { ...publicNode(deps, row), slice: slice ? { hash: slice.hash, quorum_set: slice.qset } : null, paired_with: pairedWith(deps, id), counts };
      },
    }),
  ];
}

/** GET /me/export: every row the node owns, credentials excluded (bot token hashes included only as ids). */
function exportOf(deps: RelayDeps, nodeId: string, phone: string | null): Record<string, unknown> {
  const row = getNode(deps, nodeId)!;
  const rows = deps.store.syncData.exports.rowsOf(nodeId);
  return {
    exported_at: isoFromMs(deps.clock.nowMs()),
    relay: deps.baseUrl,
    node: { ...publicNode(deps, row), about: row.about, phone, phone_discoverable: row.phone_discoverable === 1, credential_version: row.cred_version, registration: JSON.parse(row.registration) as unknown },
    items: rows.items,
    votes: rows.voteDocs.map((doc) => JSON.parse(doc) as unknown),
    slice: deps.store.run(deps.voting.publishedSlice(nodeId)) ?? null,
    bots: rows.bots,
    invites: rows.invites,
    pairings: rows.pairings,
    reports: rows.reports,
    events: rows.events,
  };
}

/** A random code that is easy to read aloud: 10 bytes of base32 (Crockford alphabet). */
export function readableCode(bytes = 10): string {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const raw = randomBytes(bytes);
  let out = '';
  for (const b of raw) out += alphabet[b % 32];
  return out;
}

