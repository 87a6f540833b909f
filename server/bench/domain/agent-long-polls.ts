import type { AgentRecord } from '../../storage/bench/bench-store.js';
import { LongPollSlots } from './long-poll-slots.js';

/**
 * The requests an agent holds open in this server process, bounded per agent (decision 0471):
 * `GET /api/v1/jobs/{id}?wait=`, the live UART stream, serial input waiting to hear it was
 * written, and `POST /api/v1/sessions` queueing with `wait_seconds`. Each looks at the store about
 * once a second while it waits; one agent opening a thousand slowed everyone's requests.
 */
export class AgentLongPolls {
  private readonly slots = new LongPollSlots();

  constructor(private readonly maxPerAgent: number) {}

  /** Takes a slot of `agent` (429 `too_many_long_polls` when it holds them all); returns its release. */
  take(agent: AgentRecord): () => void {
    return this.slots.take(agent.agentId, this.maxPerAgent, this.why(agent));
  }

  /** Runs `poll` in a slot of `agent`, freed when it settles. */
  run<T>(agent: AgentRecord, poll: () => Promise<T>): Promise<T> {
    return this.slots.run(agent.agentId, this.maxPerAgent, this.why(agent), poll);
  }

  private why(agent: AgentRecord): string {
    return `agent ${agent.agentId} already holds ${this.maxPerAgent} long polls on this server (job ?wait=, UART streams, serial input waiting to be written, session queues)`;
  }
}
