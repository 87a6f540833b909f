import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import { THUMB_HELLO_BKPT_5, THUMB_SPIN, thumbProgram } from '../../test/support/sim-programs.js';
import type { SimGdbIo } from '../../sim/sim-gdb-target.js';
import { SimBackend } from './sim-backend.js';
import type { SimChip } from './sim-chip.js';
import { simDeviceDebug } from './sim-debug.js';
import type { SimThread } from './sim-thread-host.js';
import { channelSink, ThreadDebugSession } from './sim-thread-debug.js';
import { CONTROL, CONTROL_WORDS, DEBUG_BATCH_CHARS } from './sim-thread-protocol.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const spin = firmwareImage(thumbProgram(THUMB_SPIN).bytes);

/** Every message waiting on `port`, taken at once (nothing is left for its listeners). */
function drain(port: MessagePort): unknown[] {
  const messages: unknown[] = [];
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) messages.push(m.message);
  return messages;
}

describe('sim debug: RSP across the engine thread', () => {
  it('more of the debugger\'s bytes than one message holds, and more replies, cross in bounded pieces, none lost', async () => {
    const device = await new SimBackend({ clock: systemClock, onUnmodelled: () => undefined }).open(pico);
    try {
      await device.flash(spin);
      const stream = await device.debug!.attach();
      const packets = Math.ceil((2 * DEBUG_BATCH_CHARS) / rspPacket('?').length);
      let received = '';
      let replies = 0;
      const allAnswered = new Promise<void>((resolve, reject) => {
        void stream.closed.then(({ reason }) => reject(new Error(`the stream ended after ${replies} replies: ${reason}`)));
        stream.onData((text) => {
          received += text;
          // Whole packets only: a reply may be cut between two messages.
          replies = received.match(/\$[^#]*#[0-9a-f]{2}/g)?.length ?? 0;
          if (replies >= packets) resolve();
        });
      });
      // One write of twice the bound: the host cuts it; the thread's replies pass the bound too.
      stream.write(rspPacket('?').repeat(packets));
      await allAnswered;
      expect(received.length).toBeGreaterThan(DEBUG_BATCH_CHARS);
      expect(replies).toBe(packets);
      expect(new Set(received.match(/\$[^#]*#[0-9a-f]{2}/g))).toEqual(new Set([rspPacket('T05thread:1;')]));
      await stream.close();
    } finally {
      await device.close();
    }
  });
});

describe('sim debug: what crosses to the thread', () => {
  it('acks alone wait and cross with the next bytes, in order; a NAK or an interrupt crosses at once', async () => {
    const thread = { setDebugListener: () => undefined, unusable: undefined } as unknown as SimThread;
    let threadPort: MessagePort | undefined;
    const crossed = () => drain(threadPort!);
    const debug = simDeviceDebug({
      boardId: () => 'pico',
      thread,
      checkAttachable: () => undefined,
      attachOnThread: async (port) => void (threadPort = port),
      serveOnThread: async () => 0,
      takeCounters: () => undefined,
      emitUart: () => undefined,
      setDebugging: () => undefined,
    });
    const stream = await debug.attach();
    stream.write('+');
    stream.write('+');
    expect(crossed()).toEqual([]);
    stream.write(rspPacket('g'));
    stream.write('+');
    stream.write('-');
    stream.write('+');
    stream.write('\x03');
    expect(crossed()).toEqual([`++${rspPacket('g')}`, '+-', '+\x03']);
    // The bench's close crosses on the same channel, after every byte before it.
    stream.write(rspPacket('D'));
    await stream.close();
    expect(crossed()).toEqual([rspPacket('D'), { type: 'close' }]);
  });
});

describe('sim debug: replies on the thread', () => {
  it("a halted stub's reply is posted as a bare string before receive returns; what it sends later goes out on the next turn; news of the device crosses with its text", async () => {
    let io: SimGdbIo | undefined;
    const chip = {
      openGdb: (given: SimGdbIo) => {
        io = given;
        return { receive: (text: string) => given.send(`+${rspPacket(`echo ${text.length}`)}`), close: () => undefined, running: false };
      },
    } as unknown as SimChip;
    const control = new Int32Array(CONTROL_WORDS);
    const { port1: hostPort, port2: threadPort } = new MessageChannel();
    const counters = { instructions: 0, simulatedNanos: 0, sleptNanos: 0, coreClockHz: 125_000_000, droppedRxBytes: 0 };
    let unmodelled: Array<{ message: string; count: number }> = [];
    const session = new ThreadDebugSession(chip, 'pico', channelSink(threadPort), {
      control,
      beat: () => undefined,
      counters: () => ({ ...counters }),
      hasUnmodelled: () => unmodelled.length > 0,
      takeUnmodelled: () => unmodelled.splice(0),
      onEnd: () => undefined,
    });
    // The first reply carries the counters (the host has none yet); the next is text alone.
    session.receive(rspPacket('?'));
    expect(drain(hostPort)).toEqual([expect.objectContaining({ text: `+${rspPacket('echo 5')}`, counters, unmodelled: [] })]);
    session.receive(rspPacket('g'));
    expect(drain(hostPort)).toEqual([`+${rspPacket('echo 5')}`]);
    expect(Atomics.load(control, CONTROL.debugWorking)).toBe(0);
    io!.send(rspPacket('S05'));
    expect(drain(hostPort)).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(drain(hostPort)).toEqual([rspPacket('S05')]);
    // A step moved the counters, or an unmodelled access was reported: the reply says so.
    counters.instructions = 1;
    session.receive(rspPacket('s'));
    expect(drain(hostPort)).toEqual([expect.objectContaining({ text: `+${rspPacket('echo 5')}`, counters })]);
    unmodelled = [{ message: 'write to 0x40000000', count: 1 }];
    session.receive(rspPacket('m0,4'));
    expect(drain(hostPort)).toEqual([expect.objectContaining({ text: `+${rspPacket('echo 8')}`, unmodelled: [{ message: 'write to 0x40000000', count: 1 }] })]);
    session.close();
    hostPort.close();
  });
});

describe('sim debug: the device after the bench ends a session', () => {
  // The bench's close travels on the session's channel, the run on the thread's main port, and
  // Node keeps no order between two ports: the thread must take the close before the run.
  it('a run right after the bench closes the stream ends as it would without a debugger (bkpt is a HardFault, the UART before it is kept)', async () => {
    const image = firmwareImage(thumbProgram(THUMB_HELLO_BKPT_5).bytes);
    for (let round = 0; round < 5; round += 1) {
      const device = await new SimBackend({ clock: systemClock, onUnmodelled: () => undefined }).open(pico);
      try {
        await device.flash(image);
        const stream = await device.debug!.attach();
        stream.write(rspPacket('?'));
        await stream.close();
        let uart = '';
        device.onUart((chunk) => (uart += Buffer.from(chunk.bytes).toString('latin1')));
        const stop = await device.run(50_000_000);
        expect({ round, stop: stop.reason, message: 'message' in stop ? stop.message : '', uart }).toEqual({
          round,
          stop: 'crashed',
          message: expect.stringContaining('bkpt #5 with no debugger attached'),
          uart: 'hi\n',
        });
      } finally {
        await device.close();
      }
    }
  });
});
