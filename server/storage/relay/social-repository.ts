import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

export interface InviteRow {
  code: string;
  inviter: string;
  created_ms: number;
  expires_ms: number;
  accepted_by: string | null;
  accepted_ms: number | null;
}

export interface PairingRow {
  token_hash: string;
  node_id: string;
  created_ms: number;
  expires_ms: number;
  confirmed_by: string | null;
  confirmed_ms: number | null;
}

/** Invites, pairing tokens and the pairs they made. */
export class SocialRepository {
  constructor(private readonly q: RelaySql) {}

  *countOpenInvites(inviter: string, nowMs: number): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM invites WHERE inviter = ? AND accepted_by IS NULL AND expires_ms > ?', inviter, nowMs);
  }

  *insertInvite(invite: { code: string; inviter: string; nowMs: number; expiresMs: number }): Steps<void> {
    yield* this.q.run('INSERT INTO invites (code, inviter, created_ms, expires_ms) VALUES (?, ?, ?, ?)', invite.code, invite.inviter, invite.nowMs, invite.expiresMs);
  }

  /** The inviter's invites, newest first. */
  *invitesOf(inviter: string): Steps<InviteRow[]> {
    return (yield* this.q.all('SELECT * FROM invites WHERE inviter = ? ORDER BY created_ms DESC', inviter)) as InviteRow[];
  }

  *invite(code: string): Steps<InviteRow | undefined> {
    return (yield* this.q.get('SELECT * FROM invites WHERE code = ?', code)) as InviteRow | undefined;
  }

  *acceptInvite(code: string, nodeId: string, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE invites SET accepted_by = ?, accepted_ms = ? WHERE code = ?', nodeId, nowMs, code);
  }

  /**
   * Deletes the inviter's invites that are done with: those expired unaccepted at least `keptMs`
   * ago, and those accepted at least `keptMs` ago (who accepted stays in `nodes.invited_by`).
   * Called when the inviter creates another, so one node's rows stay bounded by the open cap
   * instead of growing by the cap every lifetime; `GET /invites` still shows each for `keptMs`.
   */
  *pruneDoneInvites(inviter: string, nowMs: number, keptMs: number): Steps<void> {
    (yield* this.q.run(
      'DELETE FROM invites WHERE inviter = ? AND ((accepted_by IS NULL AND expires_ms <= ?) OR (accepted_by IS NOT NULL AND accepted_ms <= ?))',
      inviter,
      nowMs - keptMs,
      nowMs - keptMs,
    ));
  }

  /**
   * Deletes the node's pairing tokens that are done with: expired unconfirmed ones, and confirmed
   * ones older than `keptMs` (the pair they made is kept in `pairs`). Called when the node starts
   * another, so one node's rows stay bounded by the pending cap.
   */
  *pruneDonePairings(nodeId: string, nowMs: number, keptMs: number): Steps<void> {
    yield* this.q.run('DELETE FROM pairings WHERE node_id = ? AND ((confirmed_by IS NULL AND expires_ms <= ?) OR (confirmed_by IS NOT NULL AND confirmed_ms <= ?))', nodeId, nowMs, nowMs - keptMs);
  }

  /** The node's pairing tokens neither confirmed nor expired. */
  *countPendingPairings(nodeId: string, nowMs: number): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM pairings WHERE node_id = ? AND confirmed_by IS NULL AND expires_ms > ?', nodeId, nowMs);
  }

  *insertPairing(pairing: { tokenHash: string; nodeId: string; nowMs: number; expiresMs: number }): Steps<void> {
    yield* this.q.run('INSERT INTO pairings (token_hash, node_id, created_ms, expires_ms) VALUES (?, ?, ?, ?)', pairing.tokenHash, pairing.nodeId, pairing.nowMs, pairing.expiresMs);
  }

  *pairing(tokenHash: string): Steps<PairingRow | undefined> {
    return (yield* this.q.get('SELECT * FROM pairings WHERE token_hash = ?', tokenHash)) as PairingRow | undefined;
  }

  /** Marks the pairing confirmed by `nodeId` and records the pair (once, in id order). Call inside a transaction. */
  *confirmPairing(pairing: PairingRow, nodeId: string, nowMs: number): Steps<void> {
    yield* this.q.run('UPDATE pairings SET confirmed_by = ?, confirmed_ms = ? WHERE token_hash = ?', nodeId, nowMs, pairing.token_hash);
    const [a, b] = [pairing.node_id, nodeId].sort() as [string, string];
    yield* this.q.run('INSERT INTO pairs (a, b, created_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', a, b, nowMs);
  }

  /** Nodes paired with `nodeId`, both directions, oldest pairing first. */
  *pairedWith(nodeId: string): Steps<string[]> {
    const rows = (yield* this.q.all('SELECT a, b FROM pairs WHERE a = ? OR b = ? ORDER BY created_ms', nodeId, nodeId)) as { a: string; b: string }[];
    return rows.map((r) => (r.a === nodeId ? r.b : r.a));
  }

  /** Every pair, oldest first, at most `limit`. */
  *pairs(limit: number): Steps<[string, string][]> {
    return ((yield* this.q.all('SELECT a, b FROM pairs ORDER BY created_ms LIMIT ?', limit)) as { a: string; b: string }[]).map((p) => [p.a, p.b]);
  }
}
