import { isoFromMs } from '../../../core/clock.js';
import { botView, botWithOwnerView, nodeDetailView, nodeExportView, ownNodeView, publicNode } from '../views/node-view.js';
import { maskPhone, normalizePhone } from '../domain/phone-codes.js';
import type { RelayDeps } from '../relay-deps.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { botCreatedSchema, botSchema, codeRequestSchema, credentialAnswerSchema, directorySchema, exportSchema, lookupSchema, meNodeSchema, meSchema, nodeDetailSchema, nodesPageSchema, phoneVerifiedSchema, recoveredSchema, registerAnswerSchema, searchSchema } from '../../../wire/relay/identity-responses.js';
import { type RelayRoute, callerNode, knownCaller, route } from './relay-route.js';
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
import { NodeReads } from '../queries/node-reads.js';
import { Account } from '../use-cases/account.js';
import { type NodeCredential, Register } from '../use-cases/register.js';

/** Identities, credentials, phone numbers, bots, directory and search. */
export function identityRoutes(deps: RelayDeps): RelayRoute[] {
  // What changes state goes through a use case, what reads through a query; views shape the answers.
  const register = new Register(deps);
  const account = new Account(deps);
  const nodes = new NodeReads(deps);
  const relayNodeId = deps.selfKey.nodeId;
  const credentialAnswer = ({ nodeId, credential }: NodeCredential) => ({ node_id: nodeId, credential, authorization: `Bearer ${credential}` });

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
      handle: async ({ body, res }) => {
        const { created, ...credential } = await register.register(body);
        if (created) deps.counts.registrations++;
        else res.status(200);
        return { ...credentialAnswer(credential), created };
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
      handle: async ({ body }) => credentialAnswer(await register.session(body)),
    }),
    route({
      method: 'get',
      path: '/me',
      summary: 'The calling node (for a bot: the bot and the node it acts for).',
      auth: 'human-or-bot',
      since: '0.9.3',
      response: meSchema,
      handle: async ({ caller }) => {
        const known = knownCaller(caller);
        const { own, bots } = await nodes.caller(known);
        const node = ownNodeView(own, relayNodeId);
        if (known.kind === 'bot') return { caller: 'bot', bot_id: known.botId, node };
        return { caller: 'human', node, bots: (bots ?? []).map((bot) => botView(bot)) };
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
      handle: async ({ caller, body }) => ownNodeView(await account.updateProfile(callerNode(caller), { name: body.name ?? null, about: body.about ?? null }), relayNodeId),
    }),
    route({
      method: 'get',
      path: '/me/export',
      summary: 'Everything the caller owns on this relay, as one JSON document.',
      auth: 'human',
      since: '0.9.3',
      response: exportSchema,
      handle: async ({ caller }) => nodeExportView(await nodes.exportOf(callerNode(caller)), { baseUrl: deps.baseUrl, relayNodeId }),
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
        return account.startPhoneProof(callerNode(caller), phone);
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
      handle: async ({ caller, body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        await account.verifyPhone(callerNode(caller), phone, body.code);
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
      handle: async ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return account.startCode('login', phone);
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
      handle: async ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return credentialAnswer(await register.login(phone, body.code));
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
      handle: async ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        return account.startCode('recover', phone);
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
      handle: async ({ body }) => {
        const phone = normalizePhone(body.phone, ['body', 'phone']);
        const { nodeId, revokedBots } = await account.recover(phone, body.code);
        return { ...credentialAnswer(await register.credentialOf(nodeId)), revoked: { earlier_credentials: true, bots: revokedBots } };
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
      handle: async ({ caller, query }) => {
        const phone = normalizePhone(query.phone, ['query', 'phone']);
        return { phone, nodes: await account.lookup(callerNode(caller), phone) };
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
      handle: async ({ caller, body }) => {
        const owner = callerNode(caller);
        const { botId, token, createdMs } = await account.createBot(owner, body.name);
        return { bot_id: botId, name: body.name, owner, token, authorization: `Bot ${token}`, created_at: isoFromMs(createdMs) };
      },
    }),
    route({
      method: 'get',
      path: '/bots/me',
      summary: 'The calling bot.',
      auth: 'bot',
      since: '0.9.19',
      response: botSchema,
      handle: async ({ caller }) => {
        if (caller.kind !== 'bot') throw new Error('unreachable: route requires a bot');
        return botWithOwnerView(await nodes.bot(caller.botId));
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
      handle: async ({ caller, body }) => {
        const row = await account.updateDirectory(callerNode(caller), { listed: body.listed ?? null, phoneDiscoverable: body.phone_discoverable ?? null });
        return { node_id: row.node_id, listed: row.listed === 1, phone_discoverable: row.phone_discoverable === 1 };
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
      handle: async ({ query }) => {
        const found = await nodes.search(query.q);
        return {
          q: query.q,
          nodes: found.nodes.map((n) => publicNode(n, relayNodeId)),
          items: found.items.map((i) => ({ id: i.item_id, type: i.type, kind: i.kind, title: i.title, author: i.author, created_at: isoFromMs(i.created_ms) })),
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
      handle: async () => {
        const { rows, total, truncated } = await nodes.list();
        return { nodes: rows.map((r) => publicNode(r, relayNodeId)), total, truncated };
      },
    }),
    route({
      method: 'get',
      path: '/nodes/{id}',
      summary: 'One node: profile, published slice, pairings and activity counts.',
      auth: 'none',
      since: '0.9.3',
      response: nodeDetailSchema,
      handle: async ({ params }) => nodeDetailView(await nodes.detail(params.id!), relayNodeId),
    }),
  ];
}
