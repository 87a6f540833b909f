import type { z } from 'zod';
import { type Clock, systemClock } from '../../core/clock.js';
import { canonicalJson } from '../../core/relay/canonical-json.js';
import { claimId } from '../../core/relay/claim.js';
import { defaultThreshold, type QuorumSet } from '../../core/relay/quorum-set.js';
import { generateNodeKey, type NodeKey } from '../../core/relay/node-id.js';
import { signEd25519 } from '../../core/relay/ed25519.js';
import { signItemAuthorship } from '../../core/relay/item-authorship.js';
import { signSliceDeclaration } from '../../core/relay/slice-declaration.js';
import { signVote, type VotePhase, type VoteValue } from '../../core/relay/vote.js';
import { registerSchema } from '../../wire/relay/relay-facts.js';
import { meSchema, nodeDetailSchema, registerAnswerSchema } from '../../wire/relay/identity-responses.js';
import { bulletinSchema, itemCreatedSchema, itemDetailSchema, itemsPageSchema, sliceAnswerSchema, voteAnswerSchema } from '../../wire/relay/item-responses.js';
import { healthSchema } from '../../wire/relay/network-responses.js';
import { fieldOf, type HttpAnswer, readAnswer } from '../http-answer.js';

/** The relay's answers as types, derived from the zod schemas its /openapi.json is built from. */
export type RelayHealth = z.infer<typeof healthSchema>;
export type RegisterAnswer = z.infer<typeof registerAnswerSchema>;
export type ItemCreated = z.infer<typeof itemCreatedSchema>;
export type ItemDetail = z.infer<typeof itemDetailSchema>;
export type ItemsPage = z.infer<typeof itemsPageSchema>;
export type VoteAnswer = z.infer<typeof voteAnswerSchema>;
export type Bulletin = z.infer<typeof bulletinSchema>;
export type NodeDetail = z.infer<typeof nodeDetailSchema>;
export type Me = z.infer<typeof meSchema>;
export type SliceAnswer = z.infer<typeof sliceAnswerSchema>;

/** A relay answer of any status, as `raw` calls give it. */
export type RelayAnswer = HttpAnswer;

/** A node this client made: key, and the credential header the relay answered. */
export interface RelayNode extends NodeKey {
  authorization: string;
}

/** A claim as posted (`POST /items`). */
export interface ClaimInput {
  kind: string;
  title: string;
  body: string;
}

/** A vote to sign: the slice's `t` defaults to the protocol's 67 %. */
export interface VoteInput {
  item: string;
  value: VoteValue;
  phase: VotePhase;
  slice: { t?: number; v: string[] };
}

/** The relay answered with an error status; `detail` is its `{"detail": ...}` (a string, or the 422 list). */
export class RelayApiError extends Error {
  override name = 'RelayApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(`${method} ${path} answered ${status}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
}

/**
 * The calls of `RelayClient.raw`: they sign what the protocol wants signed, like the typed calls,
 * but answer any status unparsed and never throw on one (scenario steps, tests of refusals).
 */
export interface RawRelayCalls {
  /** Sends a request; `json` bodies are sent as application/json. `auth` is the whole Authorization value. */
  request(method: string, path: string, init?: { json?: unknown; auth?: string; headers?: Record<string, string>; body?: RequestInit['body'] }): Promise<RelayAnswer>;
  /** Makes a key (or takes `key`) and posts its signed x.register/1 document; `node` is undefined when no credential came back. */
  register(options?: { key?: NodeKey; name?: string }): Promise<{ node: RelayNode | undefined; answer: RelayAnswer }>;
  /** Posts a claim as `node` with its signed authorship; no node: without a credential (to see the 401). */
  postClaim(node: RelayNode | undefined, claim: ClaimInput): Promise<RelayAnswer>;
  /** Signs and posts a vote by `node`. */
  vote(node: NodeKey, vote: VoteInput): Promise<RelayAnswer>;
  /** `node`'s bulletin for `item`. */
  bulletin(item: string, node: string): Promise<RelayAnswer>;
}

export interface RelayClientOptions {
  /** The relay's API base URL, e.g. http://127.0.0.1:8081 (no trailing slash needed). */
  baseUrl: string;
  /** Host clock for the `created_at` of signed documents (the relay refuses 300 s off its own). Default: the system clock. */
  clock?: Clock;
  fetch?: typeof fetch;
  /** The relay's own base URL as registrations must name it, when the caller knows it (default: read once from `GET /health`). */
  selfUrl?: string;
}

/**
 * The one client of the x-relay API (docs/relay-api.md), used by the library, the scenario
 * runner, the recorder's tests and the relay's tests alike. It holds node keys in memory, signs
 * what the protocol wants signed (x.register/1 documents, x.item/1 authorship of the claims it
 * posts, x.vote/1 statements, x.slice/1 declarations) with the protocol core, parses answers with
 * the relay's own response schemas (wire/relay) and throws `RelayApiError` on an error status;
 * `raw` makes the same calls and answers any status.
 */
export class RelayClient {
  readonly baseUrl: string;
  /** The same relay without parsing: every call answers any status. */
  readonly raw: RawRelayCalls;
  private readonly clock: Clock;
  private readonly fetchFn: typeof fetch;
  /** The relay's own idea of its base URL (signed into registrations), read once from /health. */
  private selfUrl: string | undefined;

  constructor(options: RelayClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    this.fetchFn = options.fetch ?? fetch;
    this.selfUrl = options.selfUrl;
    this.raw = {
      request: (method, path, init) => this.send(method, path, init),
      register: (o) => this.sendRegistration(o),
      postClaim: (node, claim) => this.sendClaim(node, claim),
      vote: (node, vote) => this.sendVote(node, vote),
      bulletin: (item, node) => this.send('GET', `/items/${encodeURIComponent(item)}/bulletin/${encodeURIComponent(node)}`),
    };
  }

  async health(): Promise<RelayHealth> {
    return parsed(await this.send('GET', '/health'), 'GET', '/health', healthSchema);
  }

  /** Makes a node key (or takes `key`) and registers it; answers the node with its credential. */
  async register(options: { key?: NodeKey; name?: string } = {}): Promise<{ node: RelayNode; answer: RegisterAnswer }> {
    const { node, answer } = await this.sendRegistration(options);
    const registered = parsed(answer, 'POST', '/register', registerAnswerSchema);
    if (!node) throw new RelayApiError('POST', '/register', answer.status, 'the answer carried no credential');
    return { node, answer: registered };
  }

  /** Posts a claim as `node`, with its signed x.item/1 authorship so the claim travels to the relay's peers. */
  async postClaim(node: RelayNode, claim: ClaimInput): Promise<ItemCreated> {
    return parsed(await this.sendClaim(node, claim), 'POST', '/items', itemCreatedSchema);
  }

  async item(id: string): Promise<ItemDetail> {
    return parsed(await this.send('GET', `/items/${encodeURIComponent(id)}`), 'GET', `/items/${id}`, itemDetailSchema);
  }

  async items(): Promise<ItemsPage> {
    return parsed(await this.send('GET', '/items'), 'GET', '/items', itemsPageSchema);
  }

  /** Signs and posts `node`'s vote; the slice's `t` defaults to the protocol's 67 %. */
  async vote(node: NodeKey, vote: VoteInput): Promise<VoteAnswer> {
    return parsed(await this.sendVote(node, vote), 'POST', `/items/${vote.item}/vote`, voteAnswerSchema);
  }

  /**
   * Signs `node`'s slice as an x.slice/1 declaration (dated now) and publishes it with
   * `POST /slice/declare`: peers forward and verify it, unlike a slice posted with `POST /slice`.
   * The slice's `t` defaults to the protocol's 67 %.
   */
  async declareSlice(node: NodeKey, slice: { t?: number; v: string[]; i?: { t: number; v: string[]; i: [] }[] }): Promise<SliceAnswer> {
    const inner = slice.i ?? [];
    const declaration = signSliceDeclaration(
      { node_id: node.nodeId, slice: { t: slice.t ?? defaultThreshold(slice.v.length + inner.length), v: slice.v, i: inner }, updated_ms: this.clock.nowMs() },
      node.secretKey,
    );
    return parsed(await this.send('POST', '/slice/declare', { json: declaration }), 'POST', '/slice/declare', sliceAnswerSchema);
  }

  /** `node`'s bulletin for `item`, as the relay tallies it. */
  async bulletin(item: string, node: string): Promise<Bulletin> {
    return parsed(await this.raw.bulletin(item, node), 'GET', `/items/${item}/bulletin/${node}`, bulletinSchema);
  }

  async node(id: string): Promise<NodeDetail> {
    return parsed(await this.send('GET', `/nodes/${encodeURIComponent(id)}`), 'GET', `/nodes/${id}`, nodeDetailSchema);
  }

  /** The node behind a credential. */
  async me(node: RelayNode): Promise<Me> {
    return parsed(await this.send('GET', '/me', { auth: node.authorization }), 'GET', '/me', meSchema);
  }

  /** The base URL the relay believes it has (`GET /health` `base_url`): registrations must name it. */
  async relaySelfUrl(): Promise<string> {
    if (this.selfUrl) return this.selfUrl;
    const health = await this.send('GET', '/health');
    const url = fieldOf(health.json, 'base_url');
    if (health.status !== 200 || typeof url !== 'string') {
      throw new Error(`GET ${this.baseUrl}/health answered ${health.status} without base_url: ${health.text.slice(0, 200)}`);
    }
    this.selfUrl = url;
    return url;
  }

  private async send(method: string, path: string, init: { json?: unknown; auth?: string; headers?: Record<string, string>; body?: RequestInit['body'] } = {}): Promise<RelayAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.auth !== undefined) headers.authorization = init.auth;
    let body = init.body;
    if (init.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(init.json);
    }
    return readAnswer(await this.fetchFn(this.baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}) }));
  }

  private nowSeconds(): number {
    return Math.floor(this.clock.nowMs() / 1000);
  }

  private async sendRegistration(options: { key?: NodeKey; name?: string } = {}): Promise<{ node: RelayNode | undefined; answer: RelayAnswer }> {
    const key = options.key ?? generateNodeKey();
    const doc: Record<string, unknown> = { schema: registerSchema, node_id: key.nodeId, relay: await this.relaySelfUrl(), created_at: this.nowSeconds() };
    if (options.name !== undefined) doc.name = options.name;
    const sig = Buffer.from(signEd25519(new TextEncoder().encode(canonicalJson(doc)), key.secretKey)).toString('base64url');
    const answer = await this.send('POST', '/register', { json: { ...doc, sig } });
    const authorization = fieldOf(answer.json, 'authorization');
    return { node: typeof authorization === 'string' ? { ...key, authorization } : undefined, answer };
  }

  private async sendClaim(node: RelayNode | undefined, claim: ClaimInput): Promise<RelayAnswer> {
    if (!node) return this.send('POST', '/items', { json: claim });
    const authorship = signItemAuthorship({ schema: 'x.item/1', item: claimId(claim), type: 'claim', author: node.nodeId }, node.secretKey);
    return this.send('POST', '/items', { json: { ...claim, authorship }, auth: node.authorization });
  }

  private async sendVote(node: NodeKey, options: VoteInput): Promise<RelayAnswer> {
    const v = [...options.slice.v].sort();
    const slice: QuorumSet = { t: options.slice.t ?? defaultThreshold(v.length), v, i: [] };
    const vote = signVote(
      { schema: 'x.vote/1', scheme: 'scp-s5', item: options.item, voter: node.nodeId, value: options.value, phase: options.phase, slice, created_at: this.nowSeconds() },
      node.secretKey,
    );
    return this.send('POST', `/items/${encodeURIComponent(options.item)}/vote`, { json: vote });
  }
}

function parsed<T>(answer: RelayAnswer, method: string, path: string, schema: z.ZodType<T>): T {
  if (answer.status < 200 || answer.status >= 300) throw new RelayApiError(method, path, answer.status, fieldOf(answer.json, 'detail') ?? answer.text);
  return schema.parse(answer.json);
}
