import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import { THUMB_SPIN, thumbProgram } from '../../test/support/sim-programs.js';
import { SimBackend } from './sim-backend.js';
import { DEBUG_BATCH_CHARS } from './sim-thread-protocol.js';

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
