import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { parseElf } from '../../core/elf.js';
import type { DebuggerConnection } from '../../core/gdb/debugger-connection.js';
import { DebuggerSlot, MAX_UNANSWERED_PACKETS } from '../../core/gdb/debugger-slot.js';
import { hexLittleEndian, rspPacket } from '../../core/gdb/rsp-packet.js';
import { RspReader } from '../../core/gdb/rsp-reader.js';
import { AvrEngine } from '../avr-engine.js';
import { RUNNING_PACKET_REPLY, type SimGdbEnd } from '../sim-gdb-target.js';

/**
 * hilbench's avr8js GDB stub, packet by packet, on the debug program (no avr-gdb needed; the
 * real-GDB walk-through is test/integration/debug-gdb.test.ts): avr-gdb's register layout, data
 * memory at 0x800000, Z0 breakpoints the stub keeps, single step, interrupt-free continue to a
 * breakpoint, the exit report, detach.
 */
const uno = loadBoardCatalog().find((b) => b.id === 'uno')!;
const bytes = new Uint8Array(readFileSync(path.resolve(import.meta.dirname, '../../firmware/debug/uno.elf')));
const elf = parseElf(bytes);
const symbol = (name: string) => elf.symbols.find((s) => s.name === name)!.value;

function stub() {
  const engine = new AvrEngine(uno, { bytes, elf }, { onUnmodelled: () => undefined });
  const reader = new RspReader();
  const replies: string[] = [];
  const waiters = new Set<() => void>();
  let uart = '';
  const ends: SimGdbEnd[] = [];
  const target = engine.openGdb({
    send: (text) => {
      for (const event of reader.feed(text)) if (event.kind === 'packet') replies.push(event.payload);
      for (const waiter of waiters) waiter();
    },
    onUart: (chunk) => (uart += Buffer.from(chunk.bytes).toString('latin1')),
    onEnd: (end) => ends.push(end),
  });
  /** Sends one packet and resolves with the next reply (an event: replies come synchronously or after slices). */
  const ask = (payload: string) =>
    new Promise<string>((resolve) => {
      const seen = replies.length;
      const check = () => {
        if (replies.length > seen) {
          waiters.delete(check);
          resolve(replies[seen]!);
        }
      };
      waiters.add(check);
      target.receive(rspPacket(payload));
      check();
    });
  return { engine, ask, target, replies, uart: () => uart, ends };
}

describe('AvrGdbTarget', () => {
  it("answers in avr-gdb's layout: 32 registers, SREG, SP, PC as a byte address", async () => {
    const { ask } = stub();
    expect(await ask('qSupported:swbreak+')).toBe('PacketSize=1000;QStartNoAckMode+');
    expect(await ask('?')).toBe('S05');
    const registers = await ask('g');
    expect(registers).toHaveLength(39 * 2);
    expect(registers.slice(70)).toBe('00000000'); // PC at reset
    expect(await ask('p22')).toBe('00000000');
    expect(await ask('vCont?')).toBe(''); // not supported: GDB falls back to c and s
  });

  it('stops at a Z0 breakpoint at main, reads the global there, steps, and runs to the exit', async () => {
    const { ask, uart, engine } = stub();
    const main = symbol('main');
    expect(await ask(`Z0,${main.toString(16)},2`)).toBe('OK');
    expect(await ask('c')).toBe('S05');
    expect(engine.cpu.pc * 2).toBe(main);
    expect(await ask('p22')).toBe(hexLittleEndian(main, 4));
    const global = 0x800000 + (symbol('debug_counter') & 0xffff);
    expect(await ask(`m${global.toString(16)},4`)).toBe('29000000'); // 41
    expect(await ask('s')).toBe('S05');
    expect(engine.cpu.pc * 2).not.toBe(main);
    expect(await ask(`z0,${main.toString(16)},2`)).toBe('OK');
    expect(await ask('c')).toBe('W00');
    expect(uart()).toBe('hilbench debug board=uno counter=42\r\n');
  });

  it('answers a detach and ends; refuses memory outside flash and data', async () => {
    const { ask, ends } = stub();
    expect(await ask('m810000,4')).toBe('E01');
    expect(await ask('m7fffff,4')).toBe('E01');
    expect(await ask('D')).toBe('OK');
    expect(ends).toEqual([{ how: 'detached' }]);
  });

  it('answers every packet sent while the chip runs with an error reply (none dropped), then the stop', async () => {
    const { ask, target, replies } = stub();
    const firstAnswer = ask('c');
    // More than the slot's MAX_UNANSWERED_PACKETS (16): each must be answered, or the slot's count of pending packets would leak.
    for (let i = 0; i < 20; i++) target.receive(rspPacket('g'));
    expect(replies).toEqual(Array(20).fill(RUNNING_PACKET_REPLY));
    // The first answer after `c` is the refused packet's; the stop reply comes when the chip stops.
    expect(await firstAnswer).toBe(RUNNING_PACKET_REPLY);
    expect(target.running).toBe(true);
  });

  it('behind the debugger slot, in no-ack mode, drops packets with a wrong checksum without holding the debugger: its ? is answered', async () => {
    const engine = new AvrEngine(uno, { bytes, elf }, { onUnmodelled: () => undefined });
    let toSlot: (text: string) => void = () => undefined;
    const target = engine.openGdb({ send: (text) => toSlot(text), onUart: () => undefined, onEnd: () => undefined });
    const debugTarget = { write: (text: string) => target.receive(text), onData: (l: (text: string) => void) => void (toSlot = l), closed: new Promise<{ reason: string }>(() => undefined), close: () => target.close() };
    const slot = new DebuggerSlot({
      boardId: 'uno',
      maxPacketBytes: 64 * 1024,
      first: debugTarget,
      attach: () => Promise.resolve(debugTarget),
      events: { connected: () => undefined, refused: () => undefined, protocolError: () => undefined, attachFailed: () => undefined, disconnected: () => undefined },
    });
    let fromGdb: (text: string) => void = () => undefined;
    const state = { sent: '', holds: [] as boolean[] };
    const connection: DebuggerConnection = {
      write: (text) => void (state.sent += text),
      end: () => undefined,
      destroy: () => undefined,
      destroyed: false,
      onData: (listener) => void (fromGdb = listener),
      hold: (held) => void state.holds.push(held),
      onEnd: () => undefined,
      onClose: () => undefined,
    };
    slot.accept(connection);
    await new Promise<void>((resolve) => setImmediate(resolve));
    fromGdb(rspPacket('QStartNoAckMode'));
    expect(state.sent).toBe(`+${rspPacket('OK')}`);
    // `$g#00`: g's checksum is 67. One more than the bound.
    for (let k = 0; k <= MAX_UNANSWERED_PACKETS; k++) fromGdb('$g#00');
    fromGdb(rspPacket('?'));
    expect(state.holds).toEqual([]);
    expect(state.sent).toBe(`+${rspPacket('OK')}${rspPacket('S05')}`);
    slot.close();
  });

  it('answers a packet under the slot bound but over its PacketSize (a 60 KB memory write) with E01, and goes on', async () => {
    const { ask, ends } = stub();
    const bytes = 30_000;
    expect(await ask(`M800100,${bytes.toString(16)}:${'00'.repeat(bytes)}`)).toBe('E01');
    expect(await ask('?')).toBe('S05');
    expect(ends).toEqual([]);
  });
});
