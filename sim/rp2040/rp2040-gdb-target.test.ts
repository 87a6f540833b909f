import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { THUMB_SLEEP_FOR_EVER, thumbProgram } from '../../test/support/sim-programs.js';
import { Rp2040Engine } from '../rp2040-engine.js';
import { RUNNING_PACKET_REPLY } from '../sim-gdb-target.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const strict = {
  onUnmodelled: (message: string) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};

/** A stub on a halted Pico (core 0 asleep, core 1 in reset) and what it sent back. */
function stub() {
  const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER), strict);
  const sent: string[] = [];
  const target = engine.openGdb({ send: (text) => sent.push(text), onUart: () => undefined, onEnd: () => undefined });
  /** The reply to one packet (acknowledged; each reply here is sent at once: the chip stays halted). */
  const ask = (payload: string) => {
    sent.length = 0;
    target.receive(rspPacket(payload));
    return sent.join('');
  };
  return { engine, ask, target, sent };
}

describe('Rp2040GdbTarget thread ids', () => {
  it('refuses a step, continue or selection of a thread that does not exist with E01, and acts on none of them', () => {
    const { engine, ask } = stub();
    const pc = engine.rp2040.core.PC;
    for (const payload of ['vCont;s:5', 'vCont;s:3;c', 'vCont;c:7', 'vCont;s:zz', 'Hg5', 'Hc3', 'Hg-2']) {
      expect(ask(payload), payload).toBe(`+${rspPacket('E01')}`);
    }
    // Nothing stepped or ran, and no thread 5 was recorded as the one that stopped.
    expect(engine.rp2040.core.PC).toBe(pc);
    expect(ask('qC')).toBe(`+${rspPacket('QC1')}`);
  });

  it('steps a thread that exists and names it in the stop reply and in qC', () => {
    const { ask } = stub();
    expect(ask('vCont;s:2')).toMatch(/thread:2;/);
    expect(ask('qC')).toBe(`+${rspPacket('QC2')}`);
    expect(ask('vCont;s:1')).toMatch(/thread:1;/);
    expect(ask('qC')).toBe(`+${rspPacket('QC1')}`);
  });
});

describe('Rp2040GdbTarget acknowledgements', () => {
  it('answers a packet with a wrong checksum with a - only (what the debugger slot counts on), and keeps acks on: rp2040js has no no-ack mode', () => {
    const { ask, target, sent } = stub();
    sent.length = 0;
    // `$g#00`: g's checksum is 67.
    target.receive('$g#00');
    expect(sent.join('')).toBe('-');
    expect(ask('QStartNoAckMode')).toBe(`+${rspPacket('')}`);
    expect(ask('?')).toMatch(/^\+\$/);
  });
});

describe('Rp2040GdbTarget while the chip runs', () => {
  it('answers every packet sent while it runs with an error reply (none dropped), and still stops at an interrupt', async () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER), strict);
    let sent = '';
    let wake = () => undefined as void;
    const target = engine.openGdb({
      send: (text) => {
        sent += text;
        wake();
      },
      onUart: () => undefined,
      onEnd: () => undefined,
    });
    target.receive(rspPacket('c'));
    expect(target.running).toBe(true);
    sent = '';
    // More than the slot's MAX_UNANSWERED_PACKETS (16): each must be answered, or the slot's count of pending packets would leak.
    for (let i = 0; i < 20; i++) target.receive(rspPacket('m20000000,4'));
    expect(sent).toBe(`+${rspPacket(RUNNING_PACKET_REPLY)}`.repeat(20));
    sent = '';
    const stopped = new Promise<void>((resolve) => (wake = () => (/\$T02/.test(sent) ? resolve() : undefined)));
    target.receive('\x03');
    await stopped;
    target.close();
  });
});
