import { jobSchema } from '../../wire/bench/bench-schemas.js';
import { uartStreamChunkSchema } from '../../wire/bench/job-answer-schemas.js';
import type { Job } from './bench-types.js';

/** One event of a job's live UART: a chunk as it was captured, or the end with the finished job. */
export type UartEvent =
  | { kind: 'uart'; offset: number; atNanos: number; timeBase: 'simulated' | 'wall'; text: string; bytes: Uint8Array }
  | { kind: 'end'; job: Job };

/**
 * Parses a Server-Sent Events body (`GET /api/v1/jobs/{id}/uart`) into UART events. Comments
 * (`: keep-alive`) are skipped; `lastId` is updated for a resumed stream (`Last-Event-ID`).
 */
export async function* parseUartEvents(body: ReadableStream<Uint8Array>, state: { lastId?: string }): AsyncGenerator<UartEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':') || line === '') continue;
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        fields[name] = name === 'data' && fields.data !== undefined ? `${fields.data}\n${value}` : value;
      }
      if (fields.id !== undefined) state.lastId = fields.id;
      if (fields.data === undefined) continue;
      const data: unknown = JSON.parse(fields.data);
      if (fields.event === 'uart') {
        const chunk = uartStreamChunkSchema.parse(data);
        yield {
          kind: 'uart',
          offset: chunk.offset,
          atNanos: chunk.at_ns,
          timeBase: chunk.time_base,
          text: chunk.text,
          bytes: Uint8Array.from(Buffer.from(chunk.base64, 'base64')),
        };
      } else if (fields.event === 'end') {
        yield { kind: 'end', job: jobSchema.parse(data) };
        return;
      }
    }
  }
}
