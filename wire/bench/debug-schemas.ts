import { z } from 'zod';

/**
 * The agent's side of the bench API's debug extension (docs/bench-api.md, "Debugging"; decisions
 * 0560, 0910): the server validates the arming and documents the answers with these, and
 * `hilbench debug --server` parses them. A debug stream is an HTTP upgrade (`Upgrade: tcp`) on
 * `debugStreamPath`: after the 101 the connection carries GDB's remote protocol, raw, both ways;
 * when the server or the board ends a stream, its last bytes are an `E.` reply saying why.
 */

/** The debug stream of job `jobId` (an `Upgrade: tcp` request with the agent's bearer token). */
export const debugStreamPath = (jobId: string) => `/api/v1/jobs/${encodeURIComponent(jobId)}/debug`;

export const armBodySchema = z.object({
  idle_timeout_seconds: z.number().gt(0).max(3600).optional().meta({ description: 'With no debugger attached this long, the debug job ends and frees the board (default 300).' }),
});
export const armAnswerSchema = z.object({ session_id: z.string(), idle_timeout_seconds: z.number(), max_debug_seconds: z.number() }).meta({ title: 'DebugArmed' });
