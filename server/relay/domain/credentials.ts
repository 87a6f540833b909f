import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isNodeId } from '../../../core/relay/node-id.js';
import { RelayRefusal } from './relay-errors.js';
import type { CredentialKind } from '../../../wire/relay/relay-facts.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { RelayStore } from '../relay-store.js';

/** Who is calling, after the Authorization header was checked. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'human'; nodeId: string }
  | { kind: 'bot'; nodeId: string; botId: string };

/** A caller that showed a human's or a bot's credential: it acts for a node. */
export type KnownCaller = Exclude<Caller, { kind: 'anonymous' }>;


/**
 * Human credentials: `<node_id>.<hmac>` where hmac = hex HMAC-SHA256(server key,
 * "x-relay human credential\n" + node_id + "\n" + cred_version). Nothing is stored per credential;
 * bumping the node's `cred_version` revokes every credential issued before.
 */
export class Credentials {
  constructor(
    private readonly store: RelayStore,
    private readonly serverKey: Buffer,
  ) {}

  humanCredential(nodeId: string, credVersion: number): string {
    return `${nodeId}.${this.hmac(nodeId, credVersion)}`;
  }

  /** The current credential of a locally registered node. */
  async currentCredential(nodeId: string): Promise<string> {
    const credVersion = await this.store.plainData.nodes.localCredVersion(nodeId);
    if (credVersion === undefined) throw new RelayRefusal('node_not_registered', 'node not registered on this relay');
    return this.humanCredential(nodeId, credVersion);
  }

  /** Revokes every human credential and every bot of the node (recovery): steps of a transaction. */
  *revokeAll(nodeId: string, nowMs: number): Steps<number> {
    const credVersion = yield* this.store.data.nodes.bumpCredVersion(nodeId, nowMs);
    yield* this.store.data.bots.revokeAllOf(nodeId, nowMs);
    return credVersion;
  }

  /** Issues a bot token; only its sha256 is stored, the token is returned once. */
  issueBotToken(): { token: string; tokenHash: string } {
    const token = `xrb_${randomBytes(32).toString('base64url')}`;
    return { token, tokenHash: sha256Hex(token) };
  }

  /** Parses and checks the Authorization header. A present but bad credential is refused (`credential_invalid`), never anonymous. */
  async authenticate(header: string | undefined): Promise<Caller> {
    if (header === undefined || header.trim() === '') return { kind: 'anonymous' };
    const match = /^(Bearer|Bot)\s+(\S+)\s*$/i.exec(header.trim());
    if (!match) throw unauthorized('Authorization must be "Bearer <node_id>.<hmac>" (humans) or "Bot <token>" (bots)');
    const scheme = match[1]!.toLowerCase();
    const value = match[2]!;
    if (scheme === 'bearer') {
      const dot = value.indexOf('.');
      const nodeId = value.slice(0, dot);
      const mac = value.slice(dot + 1);
      if (dot !== 64 || !isNodeId(nodeId) || !/^[0-9a-f]{64}$/.test(mac)) {
        throw unauthorized('malformed human credential: expected <64 hex node_id>.<64 hex hmac>');
      }
      const credVersion = await this.store.plainData.nodes.localCredVersion(nodeId);
      // Compare against a MAC even for unknown nodes so timing does not reveal which nodes exist.
      const expected = Buffer.from(this.hmac(nodeId, credVersion ?? 0), 'hex');
      if (!timingSafeEqual(expected, Buffer.from(mac, 'hex')) || credVersion === undefined) throw unauthorized('invalid or revoked human credential');
      return { kind: 'human', nodeId };
    }
    const bot = await this.store.plainData.bots.findActiveByTokenHash(sha256Hex(value));
    if (!bot) throw unauthorized('invalid or revoked bot token');
    return { kind: 'bot', nodeId: bot.owner, botId: bot.bot_id };
  }

  private hmac(nodeId: string, credVersion: number): string {
    return createHmac('sha256', this.serverKey).update(`x-relay human credential\n${nodeId}\n${credVersion}`).digest('hex');
  }
}

/** Enforces an endpoint's credential kind; returns the caller narrowed accordingly. */
export function requireCredential(caller: Caller, needed: CredentialKind): Caller {
  switch (needed) {
    case 'none':
    case 'signature':
      return caller;
    case 'human':
      if (caller.kind === 'anonymous') throw missing('this endpoint needs a human credential: Authorization: Bearer <node_id>.<hmac>');
      if (caller.kind !== 'human') throw new RelayRefusal('credential_wrong_kind', 'this endpoint is for humans; a Bot token is not accepted here');
      return caller;
    case 'bot':
      if (caller.kind === 'anonymous') throw missing('this endpoint needs a bot credential: Authorization: Bot <token>');
      if (caller.kind !== 'bot') throw new RelayRefusal('credential_wrong_kind', 'this endpoint is for bots; a human Bearer credential is not accepted here');
      return caller;
    case 'human-or-bot':
      if (caller.kind === 'anonymous') throw missing('this endpoint needs a credential: Bearer <node_id>.<hmac> or Bot <token>');
      return caller;
  }
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function unauthorized(detail: string): RelayRefusal {
  return new RelayRefusal('credential_invalid', detail);
}

function missing(detail: string): RelayRefusal {
  return new RelayRefusal('credential_missing', detail);
}

