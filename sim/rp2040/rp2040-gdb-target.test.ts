import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { THUMB_SLEEP_FOR_EVER, thumbProgram } from '../../test/support/sim-programs.js';
import { Rp2040Engine } from '../rp2040-engine.js';

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
  return { engine, ask };
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
