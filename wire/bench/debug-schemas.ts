import { z } from 'zod';
import { debugBase64Schema, debugWaitSecondsSchema } from '../worker/debug-schemas.js';

/**
 * The agent's side of the bench API's debug extension (docs/bench-api.md, "Debugging"; decision
 * 0560): the server validates the requests and documents the answers with these, and
 * `hilbench debug --server` parses the answers with them.
 */

export const armBodySchema = z.object({
  idle_timeout_seconds: z.number().gt(0).max(3600).optional().meta({ description: 'With no debugger attached this long, the debug job ends and frees the board (default 300).' }),
});
export const armAnswerSchema = z.object({ session_id: z.string(), idle_timeout_seconds: z.number(), max_debug_seconds: z.number() }).meta({ title: 'DebugArmed' });
export const streamOpenedSchema = z.object({ job_id: z.string(), stream_id: z.string(), board: z.string() }).meta({ title: 'DebugStream' });
export const sendBodySchema = z.object({ base64: debugBase64Schema.meta({ description: "The debugger's bytes (GDB's remote protocol), standard base64." }) });
export const receiveBodySchema = z.object({ wait_seconds: debugWaitSecondsSchema });
export const receiveAnswerSchema = z
  .object({ base64: z.string(), closed: z.string().nullable().meta({ description: 'Why the stream closed, once it has and everything before it was received; null while open.' }) })
  .meta({ title: 'DebugReceived' });
