import { describe, expect, it } from 'vitest';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { ExitReplyScan } from './exit-reply-scan.js';

describe('ExitReplyScan', () => {
  it('finds W and X replies, with their status, however the bytes are split', () => {
    const whole = `+${rspPacket('0123456789abcdef')}+${rspPacket('W2a')}`;
    for (let cut = 0; cut <= whole.length; cut++) {
      const scan = new ExitReplyScan();
      const found = [scan.feed(whole.slice(0, cut)), scan.feed(whole.slice(cut))].filter(Boolean);
      expect(found, `cut at ${cut}`).toEqual([{ kind: 'W', status: 0x2a }]);
    }
    expect(new ExitReplyScan().feed(rspPacket('X09'))).toEqual({ kind: 'X', status: 9 });
  });

  it('takes no other reply for an exit: a stop, a register read, a W without its two hex digits', () => {
    const scan = new ExitReplyScan();
    for (const payload of ['S05', 'T0505:00000000;', 'W', 'Wz0', `${'57'.repeat(40)}`, 'OK']) expect(scan.feed(rspPacket(payload)), payload).toBeUndefined();
    // A W inside a payload (not right after its $) is data.
    expect(scan.feed(rspPacket('mW00'))).toBeUndefined();
  });
});
