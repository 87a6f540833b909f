import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../../core/clock.js';
import type { AgentRecord, BenchStore } from '../../storage/bench/bench-store.js';
import { newId } from './bench-deps.js';
import { BenchError } from './bench-errors.js';

const TOKEN_PREFIX = 'hb_';

const sha256Hex = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

/** Agents: registration (a bearer token shown once, kept only as its hash) and authentication. */
export class AgentAuth {
  constructor(private readonly deps: { clock: Clock; store: BenchStore }) {}

  /** A new agent and its bearer token, which exists only in this answer. */
  async registerAgent(label: string): Promise<{ agent: AgentRecord; token: string }> {
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const agent: AgentRecord = { agentId: newId('ag'), label, tokenSha256: sha256Hex(token), createdAtMs: this.deps.clock.nowMs() };
    await this.deps.store.insertAgent(agent);
    return { agent, token };
  }

  /** The agent an `authorization` header names; `not_authenticated` / `invalid_*` otherwise. */
  async authenticate(header: string | undefined): Promise<AgentRecord> {
    if (header === undefined || header.trim() === '') {
      throw new BenchError('not_authenticated', 'Not authenticated: send "authorization: Bearer <token>" (register at POST /api/v1/agents/register)');
    }
    const match = /^Bearer ([A-Za-z0-9_-]+)$/i.exec(header.trim());
    if (!match || !match[1]!.startsWith(TOKEN_PREFIX)) {
      throw new BenchError('invalid_authorization_header', 'Invalid authorization header: expected "Bearer hb_..."');
    }
    const agent = await this.deps.store.findAgentByTokenSha256(sha256Hex(match[1]!));
    if (!agent) throw new BenchError('invalid_token', 'Invalid token: no agent has this token');
    return agent;
  }
}
