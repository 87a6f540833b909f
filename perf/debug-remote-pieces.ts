import { MessageChannel, Worker } from 'node:worker_threads';
import * as ws from 'ws';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { RspReader } from '../core/gdb/rsp-reader.js';

/**
 * What each piece of hilbench's own work on a remote GDB register read costs alone (decision
 * 0815): the pieces decision 0812 named as suspects (the RSP checks, the latin1 round trips, the
 * frames), each timed in a tight loop in this thread, beside what a read through the engine's thread
 * cannot avoid (one `postMessage` to a thread that waits, and its answer). A
 * diagnostic, not a benchmark section: `npx tsx perf/debug-remote-pieces.ts`, on a quiet machine.
 */
const LOOPS = 200_000;

/** ws's frame builder: ws exports it, @types/ws does not declare it. */
const { Sender } = ws as unknown as {
  Sender: { frame(data: Buffer, options: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; maskBuffer: Buffer; readOnly: boolean }): Buffer[] };
};

/** Mean ns of one call of `piece`, after a warm-up. */
function nsPerCall(piece: () => void, loops = LOOPS): number {
  for (let i = 0; i < loops / 10; i++) piece();
  const start = process.hrtime.bigint();
  for (let i = 0; i < loops; i++) piece();
  return Number(process.hrtime.bigint() - start) / loops;
}

/** The request and reply of a pico's `g` read, as they cross (the reply: 17 registers of 4 bytes, in hex). */
const request = Buffer.from(`+${rspPacket('g')}`, 'latin1');
const reply = Buffer.from(`+${rspPacket('0'.repeat(136))}`, 'latin1');

function report(name: string, ns: number): void {
  console.log(`${name.padEnd(78)} ${(ns / 1000).toFixed(2).padStart(7)} µs`);
}

async function main(): Promise<void> {
  const reader = new RspReader();
  report("the server's RSP check of the request (to latin1, then RspReader.feed)", nsPerCall(() => reader.feed(request.toString('latin1'))));
  report('an RspReader.feed of the reply (the worker\'s bridge checks both ways)', nsPerCall(() => reader.feed(reply.toString('latin1'))));
  report('a latin1 round trip of the request (Buffer to text to Buffer)', nsPerCall(() => Buffer.from(request.toString('latin1'), 'latin1')));
  report('a latin1 round trip of the reply', nsPerCall(() => Buffer.from(reply.toString('latin1'), 'latin1')));
  const mask = Buffer.alloc(4);
  report("a client's masked WebSocket frame of the reply (ws's Sender.frame)", nsPerCall(() => Sender.frame(reply, { fin: true, rsv1: false, opcode: 2, mask: true, maskBuffer: mask, readOnly: false })));
  report('one postMessage to a thread that waits, and its answer (a round trip)', await threadRoundTripNs());
}

/** Mean ns of a short string's round trip to a worker thread and back, one at a time: the engine thread's hop. */
async function threadRoundTripNs(): Promise<number> {
  const echo = new Worker(`require('node:worker_threads').parentPort.once('message', (port) => port.on('message', (m) => port.postMessage(m)));`, { eval: true });
  const { port1, port2 } = new MessageChannel();
  echo.postMessage(port2, [port2]);
  const trips = 3000;
  const text = request.toString('latin1');
  const start = await new Promise<bigint>((resolve) => {
    let done = 0;
    let began = 0n;
    port1.on('message', () => {
      done += 1;
      if (done === 300) began = process.hrtime.bigint();
      if (done === 300 + trips) resolve(began);
      else port1.postMessage(text);
    });
    port1.postMessage(text);
  });
  const ns = Number(process.hrtime.bigint() - start) / trips;
  port1.close();
  await echo.terminate();
  return ns;
}

await main();
