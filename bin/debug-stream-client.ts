import type { z } from 'zod';
import { JsonPostError, JsonPoster } from '../harness/debug/json-post.js';
import { armAnswerSchema, receiveAnswerSchema, streamOpenedSchema } from '../wire/bench/debug-schemas.js';
import { okAnswerSchema } from '../wire/worker/worker-schemas.js';

/**
 * The bench API's debug extension as a client calls it (docs/bench-api.md, "Debugging"; decision
 * 0560): arm a session, open a stream on its debug job, send the debugger's bytes, long-poll the
 * target's, close. A refusal throws `DebugRefused` with the server's status and detail.
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

export class DebugStreamClient {
  private readonly poster: JsonPoster;

  constructor(options: { server: string; token: string }) {
    this.poster = new JsonPoster(options.server, options.token);
  }

  /** The session's next job runs under a debugger; answers the terms. */
  arm(sessionId: string, options: { idleTimeoutSeconds?: number }): Promise<z.infer<typeof armAnswerSchema>> {
    return this.post(`/api/v1/sessions/${encodeURIComponent(sessionId)}/debug`, armAnswerSchema, options.idleTimeoutSeconds === undefined ? {} : { idle_timeout_seconds: options.idleTimeoutSeconds });
  }

  /** Opens a debug stream on the running debug job (one debugger at a time). */
  async open(jobId: string): Promise<string> {
    return (await this.post(`/api/v1/jobs/${encodeURIComponent(jobId)}/debug`, streamOpenedSchema)).stream_id;
  }

  /** The debugger's bytes (latin1 text) to the target. */
  async send(jobId: string, stream: string, text: string): Promise<void> {
    await this.post(`${this.streamPath(jobId, stream)}/send`, okAnswerSchema, { base64: Buffer.from(text, 'latin1').toString('base64') });
  }

  /** The target's bytes (latin1 text), waiting up to `waitSeconds` for some; `closed` once the stream has closed. */
  async receive(jobId: string, stream: string, waitSeconds: number, signal?: AbortSignal): Promise<{ text: string; closed: string | null }> {
    const got = await this.post(`${this.streamPath(jobId, stream)}/receive`, receiveAnswerSchema, { wait_seconds: waitSeconds }, { signal, waitMs: waitSeconds * 1000 });
    return { text: Buffer.from(got.base64, 'base64').toString('latin1'), closed: got.closed };
  }

  async close(jobId: string, stream: string): Promise<void> {
    await this.post(`${this.streamPath(jobId, stream)}/close`, okAnswerSchema);
  }

  private streamPath(jobId: string, stream: string): string {
    return `/api/v1/jobs/${encodeURIComponent(jobId)}/debug/${encodeURIComponent(stream)}`;
  }

  /** Closes its kept-alive connections. */
  end(): void {
    this.poster.close();
  }

  private async post<S extends z.ZodType>(route: string, schema: S, body?: unknown, options?: { signal?: AbortSignal; waitMs?: number }): Promise<z.infer<S>> {
    try {
      return await this.poster.post(route, schema, body, options);
    } catch (err) {
      if (err instanceof JsonPostError) throw new DebugRefused(err.status, err.detail);
      throw err;
    }
  }
}
