import type { z } from 'zod';
import { type Clock, systemClock } from '../core/clock.js';
import { type NodeKey, type VotePhase, type VoteValue, defaultThreshold, signSliceDeclaration } from '../core/relay/index.js';
import { type RelayAnswer, RelayClient as SigningRelayClient, type RelayNode } from '../harness/clients/relay-client.js';
import { bulletinSchema, healthSchema, itemDetailSchema, itemsPageSchema, meSchema } from '../server/relay/relay-responses.js';
import { itemCreatedSchema, nodeDetailSchema, registerAnswerSchema, sliceAnswerSchema, voteAnswerSchema } from '../server/relay/relay-responses-more.js';

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
export type { RelayNode };

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

export interface RelayClientOptions {
  /** The relay's API base URL, e.g. http://127.0.0.1:8081. */
  baseUrl: string;
  /** Host clock for the `created_at` of signed documents (the relay refuses 300 s off its own). Default: the system clock. */
  clock?: Clock;
  fetch?: typeof fetch;
}

/**
 * A typed client of the x-relay API (docs/relay-api.md): it holds node keys in memory, signs
 * what the protocol wants signed (registrations, votes) with the protocol core, parses answers
 * with the relay's own response schemas and throws `RelayApiError` on an error status.
 */
export class RelayClient {
  /** The same relay without parsing: `request` answers any status (for calls this class has no method for). */
  readonly raw: SigningRelayClient;

  private readonly clock: Clock;

  constructor(options: RelayClientOptions) {
    this.clock = options.clock ?? systemClock;
    this.raw = new SigningRelayClient({ baseUrl: options.baseUrl, clock: options.clock ?? systemClock, ...(options.fetch ? { fetch: options.fetch } : {}) });
  }

  async health(): Promise<RelayHealth> {
    return parsed(await this.raw.request('GET', '/health'), 'GET', '/health', healthSchema);
  }

  /** Makes a node key (or takes `key`) and registers it; answers the node with its credential. */
  async register(options: { key?: NodeKey; name?: string } = {}): Promise<{ node: RelayNode; answer: RegisterAnswer }> {
    const { node, answer } = await this.raw.register(options);
    const registered = parsed(answer, 'POST', '/register', registerAnswerSchema);
    if (!node) throw new RelayApiError('POST', '/register', answer.status, 'the answer carried no credential');
    return { node, answer: registered };
  }

  /** Posts a claim as `node`. */
  async postClaim(node: RelayNode, claim: { kind: string; title: string; body: string }): Promise<ItemCreated> {
    return parsed(await this.raw.postClaim(node, claim), 'POST', '/items', itemCreatedSchema);
  }

  async item(id: string): Promise<ItemDetail> {
    return parsed(await this.raw.request('GET', `/items/${encodeURIComponent(id)}`), 'GET', `/items/${id}`, itemDetailSchema);
  }

  async items(): Promise<ItemsPage> {
    return parsed(await this.raw.request('GET', '/items'), 'GET', '/items', itemsPageSchema);
  }

  /** Signs and posts `node`'s vote; the slice's `t` defaults to the protocol's 67 %. */
  async vote(node: NodeKey, vote: { item: string; value: VoteValue; phase: VotePhase; slice: { t?: number; v: string[] } }): Promise<VoteAnswer> {
    return parsed(await this.raw.vote(node, vote), 'POST', `/items/${vote.item}/vote`, voteAnswerSchema);
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
    return parsed(await this.raw.request('POST', '/slice/declare', { json: declaration }), 'POST', '/slice/declare', sliceAnswerSchema);
  }

  /** `node`'s bulletin for `item`, as the relay tallies it. */
  async bulletin(item: string, node: string): Promise<Bulletin> {
    return parsed(await this.raw.bulletin(item, node), 'GET', `/items/${item}/bulletin/${node}`, bulletinSchema);
  }

  async node(id: string): Promise<NodeDetail> {
    return parsed(await this.raw.request('GET', `/nodes/${encodeURIComponent(id)}`), 'GET', `/nodes/${id}`, nodeDetailSchema);
  }

  /** The node behind a credential. */
  async me(node: RelayNode): Promise<Me> {
    return parsed(await this.raw.request('GET', '/me', { auth: node.authorization }), 'GET', '/me', meSchema);
  }
}

function parsed<T>(answer: RelayAnswer, method: string, path: string, schema: z.ZodType<T>): T {
  if (answer.status < 200 || answer.status >= 300) throw new RelayApiError(method, path, answer.status, (answer.json as { detail?: unknown } | undefined)?.detail ?? answer.text);
  return schema.parse(answer.json);
}
