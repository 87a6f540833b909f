import type { PreparedStatements } from './prepared-statements.js';

/** An open (unused, unexpired) code as stored: only its HMAC is kept. */
export interface OpenCodeRow {
  id: number;
  node_id: string | null;
  code_hash: string;
  attempts: number;
}

/** One-time phone codes and the log of code sends that rate-limits them per number. */
export class PhoneCodeRepository {
  constructor(private readonly q: PreparedStatements) {}

  /** Send times for `phone` within the last hour before `nowMs`, oldest first; older sends (of every number) are dropped. */
  recentSends(phone: string, nowMs: number): number[] {
    this.q.sql('DELETE FROM code_sends WHERE sent_ms <= ?').run(nowMs - 3600_000);
    return this.q.sql('SELECT sent_ms FROM code_sends WHERE phone = ? ORDER BY sent_ms').pluck().all(phone) as number[];
  }

  recordSend(phone: string, nowMs: number): void {
    this.q.sql('INSERT INTO code_sends (phone, sent_ms) VALUES (?, ?)').run(phone, nowMs);
  }

  /**
   * Stores a new code for a number and purpose, retiring any open one; `hashOf(id)` gives the code's
   * HMAC, which binds the row id. Returns the id. Call inside a transaction.
   */
  replaceOpen(code: { phone: string; purpose: string; nodeId: string | null; nowMs: number; expiresMs: number }, hashOf: (id: number) => string): number {
    this.q.sql('UPDATE phone_codes SET used = 1 WHERE phone = ? AND purpose = ? AND used = 0').run(code.phone, code.purpose);
    const info = this.q
      .sql('INSERT INTO phone_codes (phone, purpose, node_id, code_hash, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)')
      .run(code.phone, code.purpose, code.nodeId, '', code.nowMs, code.expiresMs);
    const id = Number(info.lastInsertRowid);
    this.q.sql('UPDATE phone_codes SET code_hash = ? WHERE id = ?').run(hashOf(id), id);
    return id;
  }

  /** The newest open code for a number and purpose at `nowMs`. */
  latestOpen(phone: string, purpose: string, nowMs: number): OpenCodeRow | undefined {
    return this.q
      .sql('SELECT id, node_id, code_hash, attempts FROM phone_codes WHERE phone = ? AND purpose = ? AND used = 0 AND expires_ms > ? ORDER BY id DESC LIMIT 1')
      .get(phone, purpose, nowMs) as OpenCodeRow | undefined;
  }

  countAttempt(id: number): void {
    this.q.sql('UPDATE phone_codes SET attempts = attempts + 1 WHERE id = ?').run(id);
  }

  markUsed(id: number): void {
    this.q.sql('UPDATE phone_codes SET used = 1 WHERE id = ?').run(id);
  }
}
