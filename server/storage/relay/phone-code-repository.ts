import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** An open (unused, unexpired) code as stored: only its HMAC is kept. */
export interface OpenCodeRow {
  id: number;
  node_id: string | null;
  code_hash: string;
  attempts: number;
}

/** One-time phone codes and the log of code sends that rate-limits them per number. */
export class PhoneCodeRepository {
  constructor(private readonly q: RelaySql) {}

  /** Send times for `phone` within the last hour before `nowMs`, oldest first; older sends (of every number) are dropped. */
  *recentSends(phone: string, nowMs: number): Steps<number[]> {
    yield* this.q.run('DELETE FROM code_sends WHERE sent_ms <= ?', nowMs - 3600_000);
    return (yield* this.q.values('SELECT sent_ms FROM code_sends WHERE phone = ? ORDER BY sent_ms', phone)) as number[];
  }

  *recordSend(phone: string, nowMs: number): Steps<void> {
    yield* this.q.run('INSERT INTO code_sends (phone, sent_ms) VALUES (?, ?)', phone, nowMs);
  }

  /**
   * Stores a new code for a number and purpose, retiring any open one; `hashOf(id)` gives the code's
   * HMAC, which binds the row id. Returns the id. Call inside a transaction.
   */
  *replaceOpen(code: { phone: string; purpose: string; nodeId: string | null; nowMs: number; expiresMs: number }, hashOf: (id: number) => string): Steps<number> {
    yield* this.q.run('UPDATE phone_codes SET used = 1 WHERE phone = ? AND purpose = ? AND used = 0', code.phone, code.purpose);
    const id = Number(
      (yield* this.q.value('INSERT INTO phone_codes (phone, purpose, node_id, code_hash, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?) RETURNING id', code.phone, code.purpose, code.nodeId, '', code.nowMs, code.expiresMs)),
    );
    yield* this.q.run('UPDATE phone_codes SET code_hash = ? WHERE id = ?', hashOf(id), id);
    return id;
  }

  /** The newest open code for a number and purpose at `nowMs`. */
  *latestOpen(phone: string, purpose: string, nowMs: number): Steps<OpenCodeRow | undefined> {
    return (yield* this.q.get('SELECT id, node_id, code_hash, attempts FROM phone_codes WHERE phone = ? AND purpose = ? AND used = 0 AND expires_ms > ? ORDER BY id DESC LIMIT 1', phone, purpose, nowMs)) as OpenCodeRow | undefined;
  }

  *countAttempt(id: number): Steps<void> {
    yield* this.q.run('UPDATE phone_codes SET attempts = attempts + 1 WHERE id = ?', id);
  }

  *markUsed(id: number): Steps<void> {
    yield* this.q.run('UPDATE phone_codes SET used = 1 WHERE id = ?', id);
  }
}
