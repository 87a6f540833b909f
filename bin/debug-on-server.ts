import net from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, foregroundClock, sleep } from '../core/clock.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import type { BenchSession } from '../clients/bench/bench-session.js';
import type { Job } from '../clients/bench/bench-types.js';
import type { DebugOutcome } from '../harness/debug/debug-session.js';
import { DebugRefused, DebugStreamClient } from './debug-stream-client.js';

export interface RemoteDebugOptions {
  server: string;
  token: string;
  board: string;
  /** The ELF's bytes. */
  firmware: Uint8Array;
  /** TCP port on 127.0.0.1 for GDB; 0 picks a free one. */
  gdbPort: number;
  idleTimeoutSeconds: number;
  /** Device time the firmware runs on after a detach (the job's `uart_seconds`). */
  afterDetachSeconds: number;
  onUart: (text: string) => void;
  log: (line: string) => void;
  onListening: (port: number, job: Job) => void;
  signal?: AbortSignal;
  /** Host time for the waits (default: the real clock, keeping the process alive). */
  clock?: Clock;
}

/** Something failed before a debugger could attach (refused, unreachable, the job failed at once): `hilbench debug` exits 2. */
export class RemoteNeverRan extends Error {
  override name = 'RemoteNeverRan';
}

/** Host ms between two looks at a job that is not running yet (the job's `?wait=` answers only its end). */
export const START_LOOK_MS = 250;
/**
 * The most host ms a debug job may take to be running (flashed, the core halted at reset) once
 * submitted: the session already holds the board, so only a worker that is gone or stuck takes longer.
 */
export const START_WAIT_MS = 120_000;

/**
 * `hilbench debug --server` (issue 32, decisions 0560, 0910): opens a session on the board, arms it for
 * debugging, submits the image in it and, once the worker has it halted at reset, serves GDB on
 * 127.0.0.1: each GDB connection becomes one debug stream through the server (a second one while
 * one is attached gets the server's refusal as an `E.` reply). The job's UART is printed as it
 * comes; the session ends, and the board is freed, when the job ends (GDB detached and the
 * firmware ran on, a kill, the idle timeout) or on the signal (the job is cancelled).
 */
export async function runRemoteDebugSession(options: RemoteDebugOptions): Promise<DebugOutcome> {
  const client = new BenchClient({ baseUrl: options.server, token: options.token });
  const debug = new DebugStreamClient({ server: options.server, token: options.token });
  let session: BenchSession | undefined;
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  try {
    let job: Job;
    try {
      session = await client.openSession(options.board, { idleSeconds: 60 });
      await client.armDebug(session.id, { idleTimeoutSeconds: options.idleTimeoutSeconds });
      job = await session.submitFlash(options.firmware, { uartSeconds: options.afterDetachSeconds });
      job = await untilRunning(client, job.job_id, options.clock ?? foregroundClock, options.signal);
    } catch (err) {
      if (options.signal?.aborted) return { outcome: 'interrupted', reason: 'interrupted (Ctrl-C); the board is freed' };
      throw err instanceof RemoteNeverRan ? err : new RemoteNeverRan(describe(err));
    }
    const jobId = job.job_id;
    // Half-open allowed: a GDB that ends its side after its last packet still reads the answers the stream brings back.
    server = net.createServer({ allowHalfOpen: true }, (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      void relaySocket(socket, debug, jobId, options.log);
    });
    await new Promise<void>((resolve, reject) => {
      server!.once('error', (err: NodeJS.ErrnoException) => reject(new RemoteNeverRan(`cannot serve GDB on 127.0.0.1:${options.gdbPort}: ${err.code === 'EADDRINUSE' ? 'the port is taken (choose another with --gdb-port)' : err.message}`)));
      server!.listen(options.gdbPort, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    options.onListening(typeof address === 'object' && address ? address.port : options.gdbPort, job);
    const onAbort = () => void client.cancelJob(jobId, { reason: 'hilbench debug was interrupted (Ctrl-C)' }).catch(() => undefined);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const ended = await followToEnd(client, jobId, options.onUart);
      if (options.signal?.aborted) return { outcome: 'interrupted', reason: 'interrupted (Ctrl-C); the board is freed' };
      return outcomeOf(ended);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  } finally {
    for (const socket of sockets) socket.destroy();
    server?.close();
    await session?.end().catch(() => undefined);
  }
}

/** What `relaySocket` asks of the server (a `DebugStreamClient`): a debug stream, raw bytes both ways. */
export interface DebugStreamCalls {
  open(jobId: string): Promise<Duplex>;
}

/** The most bytes of the stream's tail kept to find its last reply (a final `E.` says why it closed). */
const TAIL_BYTES = 4096;

/**
 * One GDB connection as a debug stream (decision 0910): the server's upgraded connection, piped
 * both ways with GDB's socket (each side's end ends the other). When the stream's last bytes are an
 * `E.` reply (the board or the server ended it), its text is logged as why.
 */
export async function relaySocket(socket: net.Socket, debug: DebugStreamCalls, jobId: string, log: (line: string) => void): Promise<void> {
  socket.setNoDelay(true);
  socket.on('error', () => undefined);
  // What GDB sends before the stream is open waits for it; a GDB gone meanwhile closes the stream at once.
  const early: Buffer[] = [];
  const collect = (data: Buffer) => void early.push(data);
  socket.on('data', collect);
  let gone = false;
  socket.once('close', () => (gone = true));
  let stream: Duplex;
  try {
    stream = await debug.open(jobId);
  } catch (err) {
    const message = err instanceof DebugRefused ? err.detail : describe(err);
    log(`refused a debugger: ${message}`);
    socket.end(`+${rspPacket(`E.${message}`)}`);
    return;
  }
  stream.on('error', () => undefined);
  if (gone) {
    stream.destroy();
    return;
  }
  socket.pause();
  socket.off('data', collect);
  for (const data of early) stream.write(data);
  let tail = '';
  stream.on('data', (data: Buffer) => (tail = (tail + data.toString('latin1')).slice(-TAIL_BYTES)));
  const closed = Promise.all([new Promise((resolve) => stream.once('close', resolve)), new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)))]);
  // A close without an end (a reset) ends the other side too.
  stream.once('close', () => socket.end());
  socket.once('close', () => stream.end());
  socket.pipe(stream);
  stream.pipe(socket);
  await closed;
  const reason = finalErrorReply(tail);
  if (reason !== undefined) log(`the debug stream closed: ${reason}`);
}

/** The text of an `E.` reply that ends `tail` (the stream's last bytes), unescaped; undefined when it ends otherwise. */
export function finalErrorReply(tail: string): string | undefined {
  const reply = /\$E\.((?:[^#$}]|\}.)*)#[0-9a-f]{2}$/.exec(tail);
  return reply ? reply[1]!.replace(/\}(.)/g, (_, c: string) => String.fromCharCode(c.charCodeAt(0) ^ 0x20)) : undefined;
}

/**
 * The job once its worker has the core halted (running), or a never-ran error when it ended first
 * or was not running within `START_WAIT_MS`.
 */
export async function untilRunning(client: Pick<BenchClient, 'getJob'>, jobId: string, clock: Clock, signal: AbortSignal | undefined): Promise<Job> {
  const giveUpAtMs = clock.nowMs() + START_WAIT_MS;
  for (;;) {
    const job = await client.getJob(jobId);
    if (job.state === 'running') return job;
    if (job.state === 'failed') throw new RemoteNeverRan(`job ${jobId} failed before a debugger could attach: ${job.failure?.kind}: ${job.failure?.message}`);
    if (job.state === 'done') throw new RemoteNeverRan(`job ${jobId} ended before a debugger could attach`);
    if (signal?.aborted) throw new Error('interrupted');
    if (clock.nowMs() >= giveUpAtMs) {
      throw new RemoteNeverRan(`job ${jobId} was still ${job.state} after ${START_WAIT_MS / 1000} s, waiting for its worker to flash the board and halt its core for a debugger (is the board's worker online?)`);
    }
    await sleep(clock, START_LOOK_MS, signal);
  }
}

/** Prints the job's UART as it comes and answers the job once it has ended. */
async function followToEnd(client: BenchClient, jobId: string, onUart: (text: string) => void): Promise<Job> {
  for await (const event of client.uart(jobId)) {
    if (event.kind === 'uart') onUart(event.text);
    else return event.job;
  }
  return client.getJob(jobId);
}

function outcomeOf(job: Job): DebugOutcome {
  if (job.state === 'failed') {
    const reason = `job ${job.job_id} failed: ${job.failure?.kind}: ${job.failure?.message}`;
    return { outcome: job.failure?.kind === 'timeout' && /no debugger connected/.test(job.failure.message) ? 'timeout' : 'failed', reason };
  }
  if (job.stop?.reason === 'crashed') return { outcome: 'failed', reason: `the firmware crashed: ${job.stop.message ?? ''}` };
  if (job.stop?.reason === 'exited' && job.stop.exit_code !== 0) return { outcome: 'failed', reason: `the firmware exited with code ${job.stop.exit_code}` };
  return { outcome: 'passed', reason: `job ${job.job_id} is done: the debugger let the firmware go` };
}

function describe(err: unknown): string {
  if (err instanceof DebugRefused) return err.detail;
  const e = err as { detail?: unknown; message?: string; cause?: { message?: string } };
  if (typeof e.detail === 'string') return e.detail;
  return e.cause?.message ? `${e.message ?? ''}: ${e.cause.message}` : (e.message ?? String(err));
}
