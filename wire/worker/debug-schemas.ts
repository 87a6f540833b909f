/**
 * The worker's side of the debug streams (docs/worker-protocol.md, "Debug jobs"; decision 0910):
 * a leg the worker dials per debugger, `GET /api/v1/worker/jobs/{job_id}/debug` with its worker
 * token and `Upgrade: tcp`. The server holds the request until a debugger comes (then 101, and
 * the connection carries that debugger's bytes, raw, both ways) or for `DEBUG_LEG_HOLD_MS` (then
 * 204: dial again); 404 when the job is no longer the worker's debug job there (stop dialling).
 * The server and the worker both import these.
 */

/** The worker's debug leg of job `jobId`. */
export const workerDebugPath = (jobId: string) => `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/debug`;

/** The most host ms the server holds a worker's leg waiting for a debugger before it answers 204 (dial again). */
export const DEBUG_LEG_HOLD_MS = 30_000;

/** The protocol a debug stream's upgrade names (`Upgrade: tcp`, as Docker's attach): raw bytes both ways after the 101. */
export const DEBUG_UPGRADE_PROTOCOL = 'tcp';
