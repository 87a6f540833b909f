import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

export interface BotRow {
  bot_id: string;
  owner: string;
  name: string;
  created_ms: number;
}

/** Bots acting for a node; only the sha256 of a token is stored. */
export class BotRepository {
  constructor(private readonly q: RelaySql) {}

  *insert(bot: { botId: string; owner: string; name: string; tokenHash: string; nowMs: number }): Steps<void> {
    yield* this.q.run('INSERT INTO bots (bot_id, owner, name, token_hash, created_ms) VALUES (?, ?, ?, ?, ?)', bot.botId, bot.owner, bot.name, bot.tokenHash, bot.nowMs);
  }

  *get(botId: string): Steps<BotRow | undefined> {
    return (yield* this.q.get('SELECT bot_id, name, owner, created_ms FROM bots WHERE bot_id = ?', botId)) as BotRow | undefined;
  }

  /** The owner's bots that are not revoked, oldest first. */
  *activeOf(owner: string): Steps<Omit<BotRow, 'owner'>[]> {
    return (yield* this.q.all('SELECT bot_id, name, created_ms FROM bots WHERE owner = ? AND revoked_ms IS NULL ORDER BY created_ms', owner)) as Omit<BotRow, 'owner'>[];
  }

  *countActive(owner: string): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM bots WHERE owner = ? AND revoked_ms IS NULL', owner);
  }

  /** The bot a token (by its sha256) belongs to, unless revoked. */
  *findActiveByTokenHash(tokenHash: string): Steps<{ bot_id: string; owner: string } | undefined> {
    return (yield* this.q.get('SELECT bot_id, owner FROM bots WHERE token_hash = ? AND revoked_ms IS NULL', tokenHash)) as { bot_id: string; owner: string } | undefined;
  }

  *revokeAllOf(owner: string, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE bots SET revoked_ms = ? WHERE owner = ? AND revoked_ms IS NULL', nowMs, owner);
  }
}
