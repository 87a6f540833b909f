import { z } from 'zod';

/**
 * The agent's side of the bench API's debug extension (docs/bench-api.md, "Debugging"; decisions
 * 0560, 0625): the server validates the arming and documents the answers with these, and
 * `hilbench debug --server` parses them. A debug stream is a WebSocket on `debugStreamPath`:
 * binary messages carry GDB's remote protocol both ways; the server's last message before it
 * closes a stream is a text message `debugStreamClosedSchema` saying why.
 */

/** The debug stream of job `jobId` (a WebSocket, the agent's bearer token on the upgrade request). */
export const debugStreamPath = (jobId: string) => `/api/v1/jobs/${encodeURIComponent(jobId)}/debug`;

export const armBodySchema = z.object({
  idle_timeout_seconds: z.number().gt(0).max(3600).optional().meta({ description: 'With no debugger attached this long, the debug job ends and frees the board (default 300).' }),
});
export const armAnswerSchema = z.object({ session_id: z.string(), idle_timeout_seconds: z.number(), max_debug_seconds: z.number() }).meta({ title: 'DebugArmed' });
export const debugStreamClosedSchema = z
  .object({ closed: z.string().meta({ description: 'Why the stream closed: the server sends this last, then closes the WebSocket.' }) })
  .meta({ title: 'DebugStreamClosed' });
