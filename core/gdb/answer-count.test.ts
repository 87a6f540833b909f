import { describe, expect, it } from 'vitest';
import { hexOfText, rspPacket } from './rsp-packet.js';
import { AnswerCount } from './answer-count.js';

describe('AnswerCount', () => {
  it('counts every packet but console output, however the bytes are split', () => {
    // A monitor command's reply as QEMU sends it: output packets, then `OK`; then a stop reply and a register read.
    const whole = `+${rspPacket(`O${hexOfText('ok\n')}`)}${rspPacket(`O${hexOfText('more')}`)}${rspPacket('OK')}+${rspPacket('S05')}${rspPacket('0123abcd')}`;
    for (let cut = 0; cut <= whole.length; cut++) {
      for (let second = cut; second <= whole.length; second += 7) {
        const count = new AnswerCount();
        const answers = count.feed(whole.slice(0, cut)) + count.feed(whole.slice(cut, second)) + count.feed(whole.slice(second));
        expect(answers, `cuts at ${cut} and ${second}`).toBe(3);
      }
    }
  });

  it('takes for an answer what only starts like output: OK, an empty O, an odd run of hex digits, a run-length encoding', () => {
    const count = new AnswerCount();
    for (const payload of ['OK', 'O', 'O123', 'O30*"', 'Ox', '']) expect(count.feed(rspPacket(payload)), payload).toBe(1);
    // Acks, naks and bytes between packets are no packets.
    expect(count.feed('+-+')).toBe(0);
    expect(count.feed(rspPacket('O4f4b'))).toBe(0);
  });
});
