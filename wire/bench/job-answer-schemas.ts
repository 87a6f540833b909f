import { z } from 'zod';
import { jobSchema } from './bench-schemas.js';

/**
 * Answers of the bench's extensions to the spec (docs/bench-api.md): a job with its UART as text
 * (decision 0537), the answer to serial input, the live UART stream's chunks, and a board's
 * session queue (decision 0536).
 */

export const uartTextSchema = z
  .object({
    text: z.string().meta({ description: 'The captured bytes as UTF-8 (invalid sequences become U+FFFD); with `max_chars`, its head and tail around a `[... N characters cut ...]` line.' }),
    bytes: z.number().int(),
    dropped_bytes: z.number().int(),
    time_base: z.enum(['simulated', 'wall']),
    clock: z.string().nullable(),
    cut_chars: z.number().int().meta({ description: 'Characters of the text left out by `max_chars` (0: none).' }),
  })
  .meta({ title: 'UartText' });

export const jobTextSchema = jobSchema.extend({ uart: uartTextSchema.nullable() }).meta({ title: 'JobText' });

export type JobTextBody = z.infer<typeof jobTextSchema>;

/** `GET /api/v1/jobs/{job_id}`: the job, or with `?uart=text` or `?max_chars=` its text view. */
export const jobOrTextSchema = z.union([jobSchema, jobTextSchema]);

export const uartInputAnswerSchema = z
  .object({
    job_id: z.string(),
    accepted_bytes: z.number().int().meta({ description: 'The bytes of this request, all accepted.' }),
    input_seq: z.number().int().meta({ description: 'The number of this input within the job (1, 2, ...): inputs are written in this order.' }),
    delivery: z.enum(['written', 'queued']).meta({
      description: '`written`: the worker wrote it to the serial input before this answer; `queued`: kept for the worker, written once it fetches it (the job may still be flashing).',
    }),
    written_bytes: z.number().int().meta({ description: '`accepted_bytes` when written, 0 when queued.' }),
  })
  .meta({ title: 'UartInputWritten' });

export const boardQueueSchema = z
  .object({
    board: z.string(),
    waiting: z.number().int().meta({ description: "Requests waiting in the session queue of the board's pool (for the pool or any of its instances), on every replica (POST /api/v1/sessions with wait_seconds)." }),
    position: z.number().int().nullable().meta({ description: "The place in it (1: next) of the caller's first request (for that instance, when the path names one), or null when the caller does not wait for it." }),
  })
  .meta({ title: 'BoardQueue' });

/** One `uart` event of a job's live UART stream (`GET /api/v1/jobs/{job_id}/uart`, Server-Sent Events); the `end` event carries the job. */
export const uartStreamChunkSchema = z
  .object({
    offset: z.number().int().meta({ description: 'Bytes of the capture before this chunk.' }),
    at_ns: z.number().meta({ description: 'Device time of the chunk from reset release, nanoseconds, in the time base.' }),
    time_base: z.enum(['simulated', 'wall']),
    text: z.string(),
    base64: z.string(),
  })
  .meta({ title: 'UartStreamChunk' });

export type UartStreamChunkBody = z.infer<typeof uartStreamChunkSchema>;
export type UartInputAnswerBody = z.infer<typeof uartInputAnswerSchema>;
export type BoardQueueBody = z.infer<typeof boardQueueSchema>;
