import { z } from 'zod';
import { BASE64_PATTERN } from '../base64-pattern.js';

/**
 * The worker's side of the debug streams (docs/worker-protocol.md, decision 0560): the server
 * validates the requests with these, the worker parses the answers with them.
 */

/** The longest wait of a debug long poll, seconds (the agent's receive and the worker's events alike). */
export const MAX_DEBUG_WAIT_SECONDS = 30;

export const debugBase64Schema = z.string().regex(BASE64_PATTERN, { message: 'Value error, base64 must be standard base64 with its = padding' });
export const debugWaitSecondsSchema = z
  .number()
  .min(0)
  .max(MAX_DEBUG_WAIT_SECONDS)
  .default(20)
  .meta({ description: `How long to wait for something to arrive, seconds (at most ${MAX_DEBUG_WAIT_SECONDS}).` });

export const workerEventsBodySchema = z.object({ wait_seconds: debugWaitSecondsSchema });
export const workerEventsAnswerSchema = z.object({
  events: z.array(z.object({ stream: z.string(), kind: z.enum(['open', 'data', 'close']), base64: z.string().optional(), reason: z.string().optional() })),
  ended: z.boolean(),
});
export const workerSendBodySchema = z.object({ stream: z.string().min(1).max(200), base64: debugBase64Schema, closed: z.string().max(2000).nullable().default(null) });
