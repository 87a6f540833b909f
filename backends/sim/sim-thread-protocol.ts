import { MessagePort } from 'node:worker_threads';
import { z } from 'zod';
import type { Board } from '../../boards/board-schema.js';
import { jobFailureKinds } from '../../wire/job-failure-kinds.js';

/**
 * The messages between the sim backend (host) and an engine's thread (`sim-thread.ts`), and the
 * shared control words beside them. Both sides parse what they receive with these schemas.
 *
 * Traffic is kept small: UART output crosses in batches (at most one per slice of simulated time,
 * or when a batch reaches `UART_BATCH_BYTES`), never per byte; unmodelled accesses cross as
 * running counts per message. The one per-chunk round trip is a run with an `until` condition,
 * which lives on the host: the thread then waits for the host's verdict on every chunk
 * (`asks`), so the run stops at exactly the chunk that satisfied it, as it did in process.
 * A debugger's GDB target runs in the thread beside its engine; its RSP bytes cross on a
 * `MessageChannel` of their own (`debug-attach` hands the thread one end), as bare strings both
 * ways, batched and bounded by `DEBUG_BATCH_CHARS`: a halted target's reply to a packet is one
 * string back, with no envelope to build or parse (decision 0630).
 */

/** Indices into the shared Int32Array of one thread (`workerData.control`). */
export const CONTROL = {
  /** What the host wants of the current run: `STOP.go`, `STOP.until` or `STOP.abort`. Reset by the host before each run. */
  stop: 0,
  /** Bumped by the host when it has judged an asking batch, before its `verdict` message wakes the thread. */
  verdict: 1,
  /** Bumped by the thread at every slice and every message it handles: the host's sign of life. */
  beat: 2,
  /** 1 while the thread waits for a verdict: it is waiting on the host, not hung. */
  waiting: 3,
  /**
   * 1 while a debugger's target works (handles the debugger's bytes, or runs the chip after a
   * continue); 0 while it is halted waiting for the debugger, which is idle, not hung.
   */
  debugWorking: 4,
} as const;
export const CONTROL_WORDS = 5;
export const STOP = { go: 0, until: 1, abort: 2 } as const;

/** What the host hands a thread at start (`workerData`). */
const threadDataSchema = z.object({
  control: z.instanceof(SharedArrayBuffer),
  /** The nice value the thread lowers itself to (`SimBackendOptions.engineThreadNice`), if any. */
  nice: z.number().int().min(1).max(19).optional(),
});

/** The thread's start data, parsed. */
export function simThreadData(workerData: unknown): z.infer<typeof threadDataSchema> {
  return threadDataSchema.parse(workerData);
}

/** A batch is sent early once its chunks hold this many bytes. */
export const UART_BATCH_BYTES = 64 * 1024;

/**
 * GDB remote protocol text crosses in messages of at most this many characters (latin1, one per
 * byte), either way: the thread's replies are gathered per packet fed to the stub, per turn of its
 * event loop or per slice of a continue, and cut at this bound; the host cuts the debugger's bytes
 * the same way.
 */
export const DEBUG_BATCH_CHARS = 64 * 1024;
const rspText = z.string().max(DEBUG_BATCH_CHARS);

const bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected a Uint8Array');
const nanos = z.number().finite().nonnegative();

export const hostMessageSchema = z.discriminatedUnion('type', [
  /** Starts a device on this thread: the board and the B1 ROM, if configured. */
  z.object({
    type: z.literal('open'),
    id: z.number(),
    board: z.custom<Board>((v) => typeof v === 'object' && v !== null),
    bootrom: z.custom<Uint32Array>((v) => v instanceof Uint32Array, 'expected a Uint32Array').optional(),
  }),
  z.object({ type: z.literal('flash'), id: z.number(), bytes }),
  z.object({ type: z.literal('reset'), id: z.number() }),
  z.object({ type: z.literal('run'), id: z.number(), endNanos: nanos, sliceNanos: nanos.optional(), asks: z.boolean() }),
  z.object({ type: z.literal('read'), id: z.number(), pin: z.string() }),
  /**
   * Builds a fresh chip from the flashed image and opens its engine's GDB target beside it
   * (`SimEngine.openGdb`), talking on `port` (transferred): the debug channel's messages below.
   */
  z.object({ type: z.literal('debug-attach'), id: z.number(), port: z.instanceof(MessagePort) }),
  /**
   * Serves GDB on a TCP port from this thread (decision 0740): listens on `host`:`tcpPort`, each
   * debugger gets a fresh chip's GDB target, and `port` (transferred) carries the news and the
   * events of the served port to the host (`parseServedOutput`) and the host's close to the thread.
   * Answered once listening, with the port in `listening`.
   */
  z.object({
    type: z.literal('debug-serve'),
    id: z.number(),
    port: z.instanceof(MessagePort),
    tcpPort: z.number().int().min(0).max(65_535),
    host: z.string(),
    maxPacketBytes: z.number().int().positive(),
    /** Dial a bench server's debug legs instead of listening (decision 0910): answered with port 0. */
    relay: z.object({ serverUrl: z.string(), token: z.string(), jobId: z.string() }).optional(),
  }),
  /** Releases the device's chip; the thread may serve another device after. */
  z.object({ type: z.literal('close'), id: z.number() }),
  // Fire and forget: applied in order with the requests.
  z.object({ type: z.literal('write'), bytes }),
  z.object({ type: z.literal('drive'), pin: z.string(), level: z.union([z.literal(0), z.literal(1)]) }),
  /** Wakes a run waiting for the host's verdict on `until` (`CONTROL.verdict` has moved; `CONTROL.stop` says what it is). */
  z.object({ type: z.literal('verdict') }),
]);
export type HostMessage = z.infer<typeof hostMessageSchema>;

const countersSchema = z.object({
  instructions: z.number(),
  simulatedNanos: z.number(),
  sleptNanos: z.number(),
  coreClockHz: z.number().optional(),
  droppedRxBytes: z.number(),
});

/** Unmodelled accesses since the last message: each message with its running count. */
const unmodelledSchema = z.array(z.object({ message: z.string(), count: z.number().int().positive() }));

const engineStopSchema = z.discriminatedUnion('reason', [
  z.object({ reason: z.literal('elapsed'), elapsedNanos: nanos }),
  z.object({ reason: z.literal('until'), elapsedNanos: nanos }),
  z.object({ reason: z.literal('cancelled'), elapsedNanos: nanos }),
  z.object({ reason: z.literal('exited'), exitCode: z.number().int(), elapsedNanos: nanos }),
  z.object({ reason: z.literal('crashed'), message: z.string(), elapsedNanos: nanos }),
]);

export const threadMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({
    type: z.literal('batch'),
    chunks: z.array(z.object({ atNanos: nanos, bytes })),
    /** True when the thread waits for the verdict on `until` (a `verdict` message after `CONTROL.verdict` moved). */
    ask: z.boolean(),
    counters: countersSchema,
    unmodelled: unmodelledSchema,
  }),
  z.object({
    type: z.literal('answer'),
    id: z.number(),
    counters: countersSchema.optional(),
    unmodelled: unmodelledSchema,
    /** Absent on success; the failure in the words the device reports. */
    error: z.object({ kind: z.enum(jobFailureKinds), message: z.string() }).optional(),
    stop: engineStopSchema.optional(),
    /** A run's last UART output, after its batches (a run's answer carries it rather than a batch of its own). */
    chunks: z.array(z.object({ atNanos: nanos, bytes })).optional(),
    /** The TCP port a `debug-serve` listens on; 0 when it dials a bench server's legs instead. */
    listening: z.number().int().min(0).max(65_535).optional(),
    reading: z
      .object({ level: z.union([z.literal(0), z.literal(1)]), driver: z.enum(['firmware', 'outside', 'pull-up', 'pull-down', 'floating']) })
      .optional(),
  }),
]);
export type ThreadMessage = z.infer<typeof threadMessageSchema>;
export type ThreadAnswer = Extract<ThreadMessage, { type: 'answer' }>;
export type ThreadBatch = Extract<ThreadMessage, { type: 'batch' }>;

/**
 * On a debug session's channel, thread to host: a bare string is RSP text and nothing else (the
 * device's counters unchanged, no UART output, no unmodelled access: a halted target's reply);
 * anything more crosses as this object.
 */
const debugOutputSchema = z.object({
  text: rspText,
  chunks: z.array(z.object({ atNanos: nanos, bytes })),
  /** Set once, on the session's last message: how the debugger ended it. */
  end: z
    .discriminatedUnion('how', [
      z.object({ how: z.literal('detached') }),
      z.object({ how: z.literal('killed') }),
      z.object({ how: z.literal('protocol-error'), message: z.string() }),
    ])
    .optional(),
  counters: countersSchema,
  unmodelled: unmodelledSchema,
});
export type ThreadDebugOutput = z.infer<typeof debugOutputSchema>;
/** What a debug session tells the host besides the target's text. */
export type DebugNews = Omit<ThreadDebugOutput, 'text'>;

const endingSchema = z.discriminatedUnion('reason', [
  z.object({ reason: z.enum(['detached', 'killed']), message: z.string() }),
  z.object({ reason: z.literal('exited'), message: z.string(), exitCode: z.number().int().optional() }),
]);

/** What a port the thread serves tells the host about its debuggers (`ServedGdbEvents`, backends/backend.ts). */
const servedEventSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('connected') }),
  z.object({ event: z.literal('refused'), message: z.string() }),
  z.object({ event: z.literal('protocol-error'), message: z.string() }),
  z.object({ event: z.literal('attach-failed'), message: z.string() }),
  z.object({ event: z.literal('disconnected'), ending: endingSchema.optional() }),
  z.object({ event: z.literal('leg-trouble'), message: z.string() }),
]);
export type ServedEvent = z.infer<typeof servedEventSchema>;

/** What the thread posts on a served port's channel, parsed: an event of the port, or a session's news (its text went to the socket). */
export function parseServedOutput(raw: unknown): ServedEvent | ThreadDebugOutput {
  if (typeof raw === 'object' && raw !== null && 'event' in raw) return servedEventSchema.parse(raw);
  return debugOutputSchema.parse(raw);
}

/** What the thread posts on a debug channel, parsed: a bare string is a reply and nothing more. */
export function parseDebugOutput(raw: unknown): string | ThreadDebugOutput {
  // A string is checked by hand: the reply to every packet takes this path.
  if (typeof raw === 'string') {
    if (raw.length > DEBUG_BATCH_CHARS) throw new Error(`debug text of ${raw.length} characters, more than ${DEBUG_BATCH_CHARS}`);
    return raw;
  }
  return debugOutputSchema.parse(raw);
}

/** On a debug session's channel, host to thread: the debugger's bytes as a bare string, or the bench ending the session. */
export type DebugInput = string | { type: 'close' };

/** What the host posts on a debug channel, parsed. */
export function parseDebugInput(raw: unknown): DebugInput {
  if (typeof raw === 'string') {
    if (raw.length > DEBUG_BATCH_CHARS) throw new Error(`debugger bytes of ${raw.length} characters, more than ${DEBUG_BATCH_CHARS}`);
    return raw;
  }
  return z.object({ type: z.literal('close') }).parse(raw);
}
