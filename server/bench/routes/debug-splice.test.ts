import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { duplexPair } from '../../../core/duplex-pair.js';
import { rspPacket } from '../../../core/gdb/rsp-packet.js';
import { SPLICE_LINGER_MS, spliceDebugStream } from './debug-splice.js';

/** A splice of two in-memory legs: `gdb` is the debugger's far end, `board` the worker's. */
function spliced() {
  const fake = createClock(0);
  const [gdb, debuggerLeg] = duplexPair();
  const [board, workerLeg] = duplexPair();
  const splice = spliceDebugStream(debuggerLeg, workerLeg, { clock: clockFromFakeTimers(fake) });
  return { fake, gdb, board, splice, debuggerLeg, workerLeg };
}

/** Everything `stream` reads until it ends, as latin1. */
function readAll(stream: Duplex): Promise<string> {
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  return new Promise((resolve) => stream.once('end', () => resolve(text)));
}

describe('spliceDebugStream', () => {
  it("carries bytes both ways untouched, and either side's end ends the other", async () => {
    const { gdb, board, splice } = spliced();
    const toBoard = readAll(board);
    const toGdb = readAll(gdb);
    gdb.write('+$g#67');
    board.write('+$00#00');
    gdb.end();
    expect(await toBoard).toBe('+$g#67');
    board.end();
    expect(await toGdb).toBe('+$00#00');
    await splice.closed;
  });

  it('bounds what waits: a reader that stops reading stops the writer, and gets every byte once it reads again', async () => {
    const { gdb, board, debuggerLeg, workerLeg } = spliced();
    board.pause();
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    let written = 0;
    while (gdb.write(chunk)) written += chunk.length;
    written += chunk.length;
    // The writer is held while what waits is within the streams' own buffers, whatever more it has to send.
    const waiting = gdb.writableLength + debuggerLeg.readableLength + workerLeg.writableLength + board.readableLength;
    const buffers = [gdb.writableHighWaterMark, debuggerLeg.readableHighWaterMark, workerLeg.writableHighWaterMark, board.readableHighWaterMark].reduce((a, b) => a + b) + 2 * chunk.length;
    expect(waiting).toBeLessThanOrEqual(buffers);
    expect(written).toBeLessThanOrEqual(buffers);
    let read = 0;
    board.on('data', (data: Buffer) => (read += data.length));
    board.resume();
    await once(gdb, 'drain');
    gdb.end();
    await once(board, 'end');
    expect(read).toBe(written);
  });

  it('ended by the server: the debugger reads why as an E. reply, its last bytes, and both legs close', async () => {
    const { gdb, splice } = spliced();
    const toGdb = readAll(gdb);
    splice.end('job job_1 is done');
    expect(await toGdb).toBe(`+${rspPacket('E.job job_1 is done')}`);
    await splice.closed;
  });

  it("a debugger leg that does not take its last bytes is cut after SPLICE_LINGER_MS", async () => {
    const { fake, gdb, debuggerLeg, splice } = spliced();
    gdb.pause();
    // More than the debugger's buffers take: its end cannot finish while it does not read.
    splice.end('x'.repeat(64 * 1024));
    expect(debuggerLeg.destroyed).toBe(false);
    fake.tick(SPLICE_LINGER_MS);
    await splice.closed;
    expect(debuggerLeg.destroyed).toBe(true);
  });
});
