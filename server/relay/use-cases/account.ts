import { randomBytes } from 'node:crypto';
import type { RelayDeps } from '../relay-deps.js';
import { LookupLimiter } from '../domain/lookup-limiter.js';
import type { CodeRequestAnswer } from '../domain/phone-codes.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import { NodeReads, type OwnNode } from '../queries/node-reads.js';
import type { NodeRow } from '../../storage/relay/node-repository.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * What a node does with its account beyond its key: its profile and directory settings, prove a
 * phone number, log in and recover with it, find others by theirs, and make bots (POST /me,
 * /directory, /me/phone, /me/phone/verify, /login, /recover/start, /recover/finish, GET /lookup,
 * POST /bots). Phone numbers come normalized.
 */
export class Account {
  private readonly lookupLimiter = new LookupLimiter(relayLimits.lookupsPerHour);
  private readonly nodes: NodeReads;

  constructor(private readonly deps: RelayDeps) {
    this.nodes = new NodeReads(deps);
  }

  /** Changes the name and about text of `nodeId` (null: unchanged); answers the node as its owner now sees it. */
  async updateProfile(nodeId: string, change: { name: string | null; about: string | null }): Promise<OwnNode> {
    await this.deps.store.plainData.nodes.updateProfile(nodeId, change, this.deps.clock.nowMs());
    return this.nodes.own(nodeId);
  }

  /** Whether `nodeId` is listed in /search and found by /lookup (null: unchanged); answers its row now. */
  async updateDirectory(nodeId: string, change: { listed: boolean | null; phoneDiscoverable: boolean | null }): Promise<NodeRow> {
    const plain = this.deps.store.plainData;
    await plain.nodes.updateDirectory(nodeId, change, this.deps.clock.nowMs());
    return (await plain.nodes.get(nodeId))!;
  }

  /** Sends `nodeId` a code that proves `phone` is its number; the answer waits for the SMS gateway. */
  startPhoneProof(nodeId: string, phone: string): Promise<CodeRequestAnswer> {
    return this.deps.codes.start(phone, 'verify', nodeId, { awaitDelivery: true });
  }

  /**
   * Sends a login or recovery code to `phone` when a node verified it. The answer is the same
   * either way and does not wait for delivery, so it tells nobody whether the number is known.
   */
  async startCode(purpose: 'login' | 'recover', phone: string): Promise<CodeRequestAnswer> {
    return this.deps.codes.start(phone, purpose, await this.deps.store.plainData.phones.nodeOf(phone), { awaitDelivery: false });
  }

  /** Redeems a verification code: the number (already normalized) moves to `nodeId`. */
  async verifyPhone(nodeId: string, phone: string, code: string): Promise<void> {
    await this.deps.codes.redeem(phone, 'verify', code, { forNode: nodeId });
    await this.deps.store.tx(this.deps.store.data.phones.assign(phone, nodeId, this.deps.clock.nowMs()));
  }

  /** Redeems a recovery code: every earlier credential and bot token of the node is revoked. */
  async recover(phone: string, code: string): Promise<{ nodeId: string; revokedBots: number }> {
    const nodeId = await this.deps.codes.redeem(phone, 'recover', code);
    const { credentials, clock } = this.deps;
    const { bots } = this.deps.store.data;
    const revokedBots = await this.deps.store.tx(function* () {
      const n = yield* bots.countActive(nodeId);
      yield* credentials.revokeAll(nodeId, clock.nowMs());
      return n;
    });
    return { nodeId, revokedBots };
  }

  /** The nodes that let themselves be found by `phone`; at most `lookupsPerHour` per caller. */
  async lookup(nodeId: string, phone: string): Promise<string[]> {
    const allowed = this.lookupLimiter.take(nodeId, this.deps.clock.nowMs());
    if (!allowed.ok) {
      const retry = allowed.retryAfterSeconds;
      throw new RelayRefusal('lookup_rate_limited', `at most ${relayLimits.lookupsPerHour} lookups per hour; retry after ${retry} s`, { retryAfterSeconds: retry });
    }
    return this.deps.store.plainData.phones.discoverableNodes(phone);
  }

  /** A new bot of `owner`; its token is answered once and stored hashed. */
  async createBot(owner: string, name: string): Promise<{ botId: string; token: string; createdMs: number }> {
    const { token, tokenHash } = this.deps.credentials.issueBotToken();
    const botId = `bot_${randomBytes(9).toString('base64url')}`;
    const { bots } = this.deps.store.data;
    const clock = this.deps.clock;
    await this.deps.store.tx(function* () {
      if ((yield* bots.countActive(owner)) >= relayLimits.botsPerNodeMax) throw new RelayRefusal('bots_limit_reached', `a node may have at most ${relayLimits.botsPerNodeMax} bots`);
      yield* bots.insert({ botId, owner, name, tokenHash, nowMs: clock.nowMs() });
    });
    return { botId, token, createdMs: clock.nowMs() };
  }
}
