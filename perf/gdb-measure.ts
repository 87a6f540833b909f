import { createRequire } from 'node:module';
import net from 'node:net';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { execa } from 'execa';
import type { DeviceDebug } from '../backends/backend.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { nowMs } from './measure.js';

/**
 * What the GDB benchmarks share (perf/debug.bench.ts, perf/debug-remote.bench.ts): a device's GDB
 * stream behind a plain TCP forward, register reads timed one at a time, and GDB's own clock from
 * `target remote` to halted at main.
 */

/** A plain TCP forward to a freshly attached stream of the device: its GDB stream with no hilbench framing in between. */
export async function forwardedServer(debug: DeviceDebug): Promise<{ port: number; settled: () => Promise<unknown>; close: () => Promise<void> }> {
  let streamClosed: Promise<unknown> = Promise.resolve();
  const server = net.createServer((socket) => {
    // As the bridge does: without it Nagle's algorithm and delayed ACKs add ~40 ms to each reply.
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    // One stream at a time: a connection that comes before the last one's stream closed waits for
    // it (QEMU's attach restarts the process, which a closing session still holds).
    streamClosed = streamClosed.then(() => debug.attach()).then((stream) => {
      if (socket.destroyed) void stream.close();
      stream.onData((text) => socket.write(Buffer.from(text, 'latin1')));
      socket.on('data', (data: Buffer) => stream.write(data.toString('latin1')));
      // A kill ends the stream first; the debugger is then told by the connection's end.
      void stream.closed.then(() => socket.end());
      socket.once('close', () => void stream.close());
      return stream.closed;
    }).catch((err: unknown) => {
      // Said, and the debugger told by its connection's end, rather than an unhandled rejection.
      console.error(`forwardedServer: attaching a debugger failed: ${(err as Error).message}`);
      socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return { port: address.port, settled: () => streamClosed, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * A TCP proxy that does nothing but forward, in this thread, to 127.0.0.1:`targetPort`: each
 * connection gets its own connection to the target, bytes piped untouched both ways, Nagle off.
 * In front of an engine's own server it shows what any proxy in this process costs a read: the
 * floor for `hilbench debug`, whose bridge must sit in the path to keep its bounds.
 */
export async function plainProxy(targetPort: number): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer((debuggerSide) => {
    const targetSide = net.createConnection({ port: targetPort, host: '127.0.0.1' });
    for (const socket of [debuggerSide, targetSide]) {
      socket.setNoDelay(true);
      socket.on('error', () => undefined);
    }
    debuggerSide.pipe(targetSide).pipe(debuggerSide);
    debuggerSide.once('close', () => targetSide.destroy());
    targetSide.once('close', () => debuggerSide.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Connects, waits for the target's answer to `?`, then times `count` register reads (`g`), one at a time; per-read host ms. */
export async function timeRegisterReads(port: number, count: number): Promise<number[]> {
  const socket = net.createConnection({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffer = '';
  let waiter: (() => void) | undefined;
  socket.on('data', (data: Buffer) => {
    buffer += data.toString('latin1');
    waiter?.();
  });
  const reply = () =>
    new Promise<string>((resolve) => {
      const check = () => {
        const end = /\$([^#]*)#[0-9a-f]{2}/.exec(buffer);
        if (!end) return;
        buffer = buffer.slice(end.index + end[0].length);
        waiter = undefined;
        socket.write('+');
        resolve(end[1]!);
      };
      waiter = check;
      check();
    });
  socket.write(rspPacket('?'));
  const status = await reply();
  // A refusal (`E.` and why: a debugger still attached) ends the connection; say so rather than wait for ever.
  if (status.startsWith('E.')) {
    socket.destroy();
    throw new Error(`the GDB server on port ${port} refused the reads: ${status.slice(2)}`);
  }
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = nowMs();
    socket.write(rspPacket('g'));
    await reply();
    samples.push(nowMs() - t0);
  }
  socket.destroy();
  await new Promise((resolve) => socket.once('close', resolve));
  return samples;
}

/**
 * Times register reads (`timeRegisterReads`) from a worker thread of its own, as GDB reads from a
 * process of its own: the server under test, wherever it runs, is woken by the read and the
 * client by the reply, which a client in the server's own thread never pays. `close` ends it.
 */
export class RegisterReadClient {
  private constructor(private readonly worker: Worker) {}

  static start(): RegisterReadClient {
    // The benchmarks run under tsx, which a worker's entry does not inherit: load it through tsx's API (as backends/sim/sim-thread-host.ts does).
    const tsx = new URL('dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href;
    const entry = new URL('./gdb-read-client-thread.ts', import.meta.url).href;
    return new RegisterReadClient(new Worker(`import(${JSON.stringify(tsx)}).then((t) => t.tsImport(${JSON.stringify(entry)}, ${JSON.stringify(entry)}))`, { eval: true }));
  }

  /** `count` reads on 127.0.0.1:`port`, one at a time; per-read host ms. */
  timeRegisterReads(port: number, count: number): Promise<number[]> {
    return new Promise((resolve, reject) => {
      this.worker.once('message', (samples: number[]) => {
        this.worker.off('error', reject);
        resolve(samples);
      });
      this.worker.once('error', reject);
      this.worker.postMessage({ port, count });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/**
 * `gdb` in batch mode on `elf` from `target remote` to halted at main (break main, continue, then
 * kill), timed by GDB's own clock (its Python): GDB's start-up and the ELF's load are outside it. Host ms.
 */
export async function walkToMain(gdb: string, elf: string, port: number, cwd: string): Promise<number> {
  const result = await execa(
    gdb,
    ['-nx', '--batch', '-ex', `file ${elf}`, '-ex', 'python import time; hb_t0 = time.monotonic()', '-ex', `target remote localhost:${port}`, '-ex', 'break main', '-ex', 'continue',
      '-ex', 'python print("hilbench-to-main-ms %.3f" % ((time.monotonic() - hb_t0) * 1000))', '-ex', 'kill'],
    { reject: false, cwd },
  );
  const ms = /hilbench-to-main-ms ([\d.]+)/.exec(result.stdout);
  if (!/Breakpoint 1, main/.test(result.stdout) || !ms) throw new Error(`${gdb} did not stop at main: ${result.stdout} ${result.stderr}`);
  return Number(ms[1]);
}
