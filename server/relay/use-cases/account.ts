import { randomBytes } from 'node:crypto';
import type { RelayDeps } from '../relay-deps.js';
import { LookupLimiter } from '../domain/lookup-limiter.js';
import { RelayRefusal } from '../domain/relay-errors.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * What a node does with its account beyond its key: prove a phone number, recover with it, find
 * others by theirs, and make bots (POST /me/phone/verify, /recover/finish, GET /lookup, POST /bots).
 */
export class Account {
  private readonly lookupLimiter = new LookupLimiter(relayLimits.lookupsPerHour);

  constructor(private readonly deps: RelayDeps) {}

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
