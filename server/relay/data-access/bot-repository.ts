import type { PreparedStatements } from './prepared-statements.js';

export interface BotRow {
  bot_id: string;
  owner: string;
  name: string;
  created_ms: number;
}

/** Bots acting for a node; only the sha256 of a token is stored. */
export class BotRepository {
  constructor(private readonly q: PreparedStatements) {}

  insert(bot: { botId: string; owner: string; name: string; tokenHash: string; nowMs: number }): void {
    this.q.sql('INSERT INTO bots (bot_id, owner, name, token_hash, created_ms) VALUES (?, ?, ?, ?, ?)').run(bot.botId, bot.owner, bot.name, bot.tokenHash, bot.nowMs);
  }

  get(botId: string): BotRow | undefined {
    return this.q.sql('SELECT bot_id, name, owner, created_ms FROM bots WHERE bot_id = ?').get(botId) as BotRow | undefined;
  }

  /** The owner's bots that are not revoked, oldest first. */
  activeOf(owner: string): Omit<BotRow, 'owner'>[] {
    return this.q.sql('SELECT bot_id, name, created_ms FROM bots WHERE owner = ? AND revoked_ms IS NULL ORDER BY created_ms').all(owner) as Omit<BotRow, 'owner'>[];
  }

  countActive(owner: string): number {
    return this.q.count('SELECT COUNT(*) AS n FROM bots WHERE owner = ? AND revoked_ms IS NULL', owner);
  }

  /** The bot a token (by its sha256) belongs to, unless revoked. */
  findActiveByTokenHash(tokenHash: string): { bot_id: string; owner: string } | undefined {
    return this.q.sql('SELECT bot_id, owner FROM bots WHERE token_hash = ? AND revoked_ms IS NULL').get(tokenHash) as { bot_id: string; owner: string } | undefined;
  }

  revokeAllOf(owner: string, nowMs: number): void {
    this.q.sql('UPDATE bots SET revoked_ms = ? WHERE owner = ? AND revoked_ms IS NULL').run(nowMs, owner);
  }
}
