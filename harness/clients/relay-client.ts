import { canonicalJson, claimId, defaultThreshold, generateNodeKey, type NodeKey, type QuorumSet, signEd25519, signItemAuthorship, signVote, type VotePhase, type VoteValue } from '../../core/relay/index.js';
import type { Clock } from '../../core/clock.js';
import { readAnswer } from './http-answer.js';

/**
 * A small client of the relay service API (docs/relay-api.md) for scenarios and tests. It holds
 * node keys in memory and signs what the protocol wants signed (x.register/1 documents, x.item/1
 * authorship of the claims it posts and x.vote/1 statements) with the core's canonical JSON and Ed25519, so it works against any relay, in process
 * or remote. It never throws on an HTTP status: callers decide what an answer should be.
 */

export interface RelayAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON, or undefined when the answer is not JSON. */
  json: unknown;
}

export interface RelayClientOptions {
  /** The relay's API base URL, e.g. http://127.0.0.1:8081 (no trailing slash needed). */
  baseUrl: string;
  /** Host clock for `created_at` (Unix seconds); the relay refuses documents 300 s off its own clock. */
  clock: Clock;
  fetch?: typeof fetch;
}

/** A node this client made: key, and the credential header the relay answered. */
export interface RelayNode extends NodeKey {
  authorization: string;
}

export class RelayClient {
  readonly baseUrl: string;
  private readonly clock: Clock;
  private readonly fetchFn: typeof fetch;
  /** The relay's own idea of its base URL (signed into registrations), read once from /health. */
  private selfUrl: string | undefined;

  constructor(options: RelayClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.clock = options.clock;
    this.fetchFn = options.fetch ?? fetch;
  }

  /** Sends a request; `json` bodies are sent as application/json. `auth` is the whole Authorization value. */
  async request(method: string, path: string, init: { json?: unknown; auth?: string; headers?: Record<string, string>; body?: RequestInit['body'] } = {}): Promise<RelayAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.auth !== undefined) headers.authorization = init.auth;
    let body = init.body;
    if (init.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(init.json);
    }
    const response = await this.fetchFn(this.baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}) });
    return readAnswer(response);
  }

  /** The base URL the relay believes it has (`GET /health` `base_url`): registrations must name it. */
  async relaySelfUrl(): Promise<string> {
    if (this.selfUrl) return this.selfUrl;
    const health = await this.request('GET', '/health');
    const url = (health.json as { base_url?: unknown } | undefined)?.base_url;
    if (health.status !== 200 || typeof url !== 'string') {
      throw new Error(`GET ${this.baseUrl}/health answered ${health.status} without base_url: ${health.text.slice(0, 200)}`);
    }
    this.selfUrl = url;
    return url;
  }

  private nowSeconds(): number {
    return Math.floor(this.clock.nowMs() / 1000);
  }

  /** Makes a key (or takes `key`), posts its signed x.register/1 document; the answer's `authorization` is the credential. */
  async register(options: { key?: NodeKey; name?: string } = {}): Promise<{ node: RelayNode | undefined; answer: RelayAnswer }> {
    const key = options.key ?? generateNodeKey();
    const doc: Record<string, unknown> = { schema: 'x.register/1', node_id: key.nodeId, relay: await this.relaySelfUrl(), created_at: this.nowSeconds() };
    if (options.name !== undefined) doc.name = options.name;
    const sig = Buffer.from(signEd25519(new TextEncoder().encode(canonicalJson(doc)), key.secretKey)).toString('base64url');
    const answer = await this.request('POST', '/register', { json: { ...doc, sig } });
    const authorization = (answer.json as { authorization?: unknown } | undefined)?.authorization;
    return { node: typeof authorization === 'string' ? { ...key, authorization } : undefined, answer };
  }

  /**
   * Posts a claim as `node`, with the node's signed x.item/1 statement of authorship, so the claim
   * travels to the relay's peers (without it, it stays on this relay). No node: posted without a
   * credential (to see the 401).
   */
  postClaim(node: RelayNode | undefined, claim: { kind: string; title: string; body: string }): Promise<RelayAnswer> {
    if (!node) return this.request('POST', '/items', { json: claim });
    const authorship = signItemAuthorship({ schema: 'x.item/1', item: claimId(claim), type: 'claim', author: node.nodeId }, node.secretKey);
    return this.request('POST', '/items', { json: { ...claim, authorship }, auth: node.authorization });
  }

  /** Signs and posts a vote by `node`; the slice's `t` defaults to the protocol's 67 %. */
  async vote(node: NodeKey, options: { item: string; value: VoteValue; phase: VotePhase; slice: { t?: number; v: string[] } }): Promise<RelayAnswer> {
    const v = [...options.slice.v].sort();
    const slice: QuorumSet = { t: options.slice.t ?? defaultThreshold(v.length), v, i: [] };
    const vote = signVote(
      { schema: 'x.vote/1', scheme: 'scp-s5', item: options.item, voter: node.nodeId, value: options.value, phase: options.phase, slice, created_at: this.nowSeconds() },
      node.secretKey,
    );
    return this.request('POST', `/items/${encodeURIComponent(options.item)}/vote`, { json: vote });
  }

  /** `node`'s bulletin for `item`, as the relay tallies it. */
  bulletin(item: string, node: string): Promise<RelayAnswer> {
    return this.request('GET', `/items/${encodeURIComponent(item)}/bulletin/${encodeURIComponent(node)}`);
  }
}
