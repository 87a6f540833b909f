import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import { THUMB_SPIN, thumbProgram } from '../../test/support/sim-programs.js';
import type { SimGdbIo } from '../../sim/sim-gdb-target.js';
import { SimBackend } from './sim-backend.js';
import type { SimChip } from './sim-chip.js';
import { simDeviceDebug } from './sim-debug.js';
import type { HostNotice, SimThread } from './sim-thread-host.js';
import { ThreadDebugSession } from './sim-thread-debug.js';
import { CONTROL, CONTROL_WORDS, DEBUG_BATCH_CHARS } from './sim-thread-protocol.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const spin = firmwareImage(thumbProgram(THUMB_SPIN).bytes);

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
    const crossed: string[] = [];
    const thread = {
      nextDebugSession: () => 1,
      setDebugListener: () => undefined,
      unusable: undefined,
      notify: (message: HostNotice) => {
        if (message.type === 'debug-in') crossed.push(message.text);
      },
    } as unknown as SimThread;
    const debug = simDeviceDebug({
      boardId: () => 'pico',
      thread,
      checkAttachable: () => undefined,
      attachOnThread: async () => undefined,
      takeCounters: () => undefined,
      emitUart: () => undefined,
      setDebugging: () => undefined,
    });
    const stream = await debug.attach();
    stream.write('+');
    stream.write('+');
    expect(crossed).toEqual([]);
    stream.write(rspPacket('g'));
    stream.write('+');
    stream.write('-');
    stream.write('+');
    stream.write('\x03');
    expect(crossed).toEqual([`++${rspPacket('g')}`, '+-', '+\x03']);
    await stream.close();
  });
});

describe('sim debug: replies on the thread', () => {
  it("a halted stub's reply is posted before receive returns; what it sends later goes out on the next turn", async () => {
    let io: SimGdbIo | undefined;
    const chip = {
      openGdb: (given: SimGdbIo) => {
        io = given;
        return { receive: (text: string) => given.send(`+${rspPacket(`echo ${text.length}`)}`), close: () => undefined, running: false };
      },
    } as unknown as SimChip;
    const posted: string[] = [];
    const control = new Int32Array(CONTROL_WORDS);
    const session = new ThreadDebugSession(chip, 'pico', { control, beat: () => undefined, send: (output) => posted.push(output.text), onEnd: () => undefined });
    session.receive(rspPacket('g'));
    expect(posted).toEqual([`+${rspPacket('echo 5')}`]);
    expect(Atomics.load(control, CONTROL.debugWorking)).toBe(0);
    io!.send(rspPacket('S05'));
    expect(posted).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(posted).toEqual([`+${rspPacket('echo 5')}`, rspPacket('S05')]);
    session.close();
  });
});
