import { z } from 'zod';

/**
 * The worker's side of the debug streams (docs/worker-protocol.md, "Debug jobs"; decision 0625):
 * one WebSocket the worker dials per debug job, `GET /api/v1/worker/jobs/{job_id}/debug` with its
 * worker token. Text messages are JSON control messages parsed by these schemas; binary messages
 * are a stream's bytes (`debugDataFrame`). The server and the worker both import them.
 */

/** The worker's debug channel of job `jobId`. */
export const workerDebugPath = (jobId: string) => `/api/v1/worker/jobs/${encodeURIComponent(jobId)}/debug`;

/** The largest WebSocket message either side accepts, bytes: a 64 KiB RSP packet and its escapes fit well within it. */
export const MAX_DEBUG_MESSAGE_BYTES = 256 * 1024;

/** A debugger's stream on the job, numbered from 1 in the order the server opened them. */
const streamNumberSchema = z.number().int().min(1).max(0xffff_ffff);

/** What the server tells the worker: a debugger's stream opened (the core is reset, halted, for it), it closed (why), or the job is no longer a debug job here. */
export const serverDebugMessageSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('open'), stream: streamNumberSchema }),
  z.object({ kind: z.literal('close'), stream: streamNumberSchema, reason: z.string() }),
  z.object({ kind: z.literal('ended'), reason: z.string() }),
]);
export type ServerDebugMessage = z.infer<typeof serverDebugMessageSchema>;

/** What the worker tells the server: the board closed a stream (why). */
export const workerDebugMessageSchema = z.object({ kind: z.literal('close'), stream: streamNumberSchema, reason: z.string().max(2000) });
export type WorkerDebugMessage = z.infer<typeof workerDebugMessageSchema>;

/** A binary message: the stream's number (4 bytes, big-endian), then its bytes (GDB's remote protocol). */
export function debugDataFrame(stream: number, bytes: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(4 + bytes.length);
  frame.writeUInt32BE(stream, 0);
  bytes.copy(frame, 4);
  return frame;
}

/** A binary message's stream and bytes; undefined when it is too short to carry a stream number. */
export function parseDebugDataFrame(frame: Buffer): { stream: number; bytes: Buffer } | undefined {
  if (frame.length < 4) return undefined;
  const stream = frame.readUInt32BE(0);
  return stream === 0 ? undefined : { stream, bytes: frame.subarray(4) };
}
