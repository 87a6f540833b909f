import type { Request, Response } from 'express';
import type { JobRecord } from '../../storage/bench/bench-store.js';
import { jobBody } from '../views/bench-views.js';
import type { UartStreamChunkBody } from '../../../wire/bench/job-answer-schemas.js';
import type { JobStreams } from '../domain/job-streams.js';

/** Host ms of silence on a UART stream after which a `: keep-alive` comment is sent. */
const KEEP_ALIVE_MS = 15_000;

type StreamOptions = Parameters<JobStreams['streamUart']>[2];

/**
 * The byte offset a `Last-Event-ID` resumes from: the ids this stream gives are decimal byte
 * offsets, so only decimal digits (within the safe integers) are one (blanks around a header value
 * are not part of it, RFC 9110 section 5.5, so ` 5` is 5). Anything else (`0x10`, `1e2`,
 * `+5`, `-1`, a number past 2^53) names no place in the stream and is read as no `Last-Event-ID`,
 * the whole stream: never bytes skipped that the client has not seen, and not a 422 either, which
 * an EventSource would take as the end of the stream and never reconnect.
 */
export function resumeOffsetOf(lastEventId: string | undefined): number {
  if (lastEventId === undefined || !/^[0-9]+$/.test(lastEventId)) return 0;
  const offset = Number(lastEventId);
  return Number.isSafeInteger(offset) ? offset : 0;
}

/**
 * Answers `req` with a job's UART as Server-Sent Events (`uart` events whose id is the byte
 * offset after the chunk, then one `end` event with the job), resuming after `Last-Event-ID`:
 * the one wire format of the API's stream and the console's. `open` starts the stream (it throws
 * the caller's refusal before anything is written).
 */
export async function answerUartEventStream(req: Request, res: Response, open: (options: StreamOptions) => Promise<() => void>): Promise<void> {
  const fromOffset = resumeOffsetOf(req.get('last-event-id'));
  const write = (text: string) => {
    if (!res.writableEnded) res.write(text);
  };
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();
  };
  const stop = await open({
    fromOffset,
    onChunk: (c) => {
      start();
      const data: UartStreamChunkBody = { offset: c.offset, at_ns: c.atNanos, time_base: c.timeBase, text: new TextDecoder().decode(c.bytes), base64: Buffer.from(c.bytes).toString('base64') };
      write(`event: uart\nid: ${c.offset + c.bytes.length}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    onEnd: (job: JobRecord) => {
      start();
      write(`event: end\ndata: ${JSON.stringify(jobBody(job))}\n\n`);
      res.end();
    },
    onIdle: () => {
      start();
      write(': keep-alive\n\n');
    },
    idleMs: KEEP_ALIVE_MS,
  });
  // Headers go out at once: a client sees the stream open before the first byte is printed.
  start();
  // A client gone while the stream opened: 'close' came already, so stop now (its slot is freed).
  if (res.closed) stop();
  else res.on('close', stop);
}
