import type { Socket } from 'node:net';
import { dialTcpUpgrade, refusalDetail } from '../clients/bench/tcp-upgrade.js';
import { type Clock, foregroundClock } from '../core/clock.js';
import { debugStreamPath } from '../wire/bench/debug-schemas.js';

/**
 * The bench API's debug extension as a client calls it (docs/bench-api.md, "Debugging"; decisions
 * 0560, 0910): a debug stream, raw bytes on an HTTP upgrade (`Upgrade: tcp`), on a debug job
 * (`BenchClient.armDebug` arms the session first). A refusal throws `DebugRefused` with the
 * server's status and detail.
 */
export class DebugRefused extends Error {
  override readonly name = 'DebugRefused';
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/**
 * The most host ms the server may take to answer a debug stream's upgrade: it answers once the
 * job's worker took the stream (at most 10 s there), or refuses.
 */
export const DEBUG_STREAM_ANSWER_MS = 30_000;

export class DebugStreamClient {
  constructor(private readonly options: { server: string; token: string; clock?: Clock }) {}

  /** Opens a debug stream on the running debug job (one debugger at a time): the upgraded socket, GDB's bytes both ways; rejects with `DebugRefused` when the server refuses it. */
  async open(jobId: string): Promise<Socket> {
    const url = new URL(this.options.server.replace(/\/+$/, '') + debugStreamPath(jobId));
    const answer = await dialTcpUpgrade(url, { token: this.options.token, clock: this.options.clock ?? foregroundClock, answerMs: DEBUG_STREAM_ANSWER_MS });
    if (answer.kind === 'upgraded') return answer.socket;
    throw new DebugRefused(answer.status, refusalDetail(answer.body));
  }
}
