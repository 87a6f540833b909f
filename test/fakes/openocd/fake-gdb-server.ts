import { readFileSync } from 'node:fs';
import net from 'node:net';
import { loadableSegments, parseElf } from '../../../core/elf.js';
import { hexLittleEndian, hexOfBytes, rspPacket } from '../../../core/gdb/rsp-packet.js';
import { RspReader } from '../../../core/gdb/rsp-reader.js';
import type { FakeBoard } from './fake-board.js';

/**
 * The GDB server of the stand-in tools (`openocd ... -c "gdb_port N"`, `probe-rs gdb`), speaking
 * the subset of the remote protocol GDB uses to attach, read and detach, as OpenOCD's does on a
 * Cortex-M: a target description with the m-profile registers, the core halted at reset (pc and
 * sp from the flashed image's vector table), memory read from the image's loaded segments (RAM
 * reads zero), breakpoints accepted, `c` starting the fake firmware (its UART then prints), the
 * interrupt halting it, `s` one 2-byte instruction on. It executes nothing: it is for the
 * bench's plumbing (process, port, bridge, detach and resume), not for stepping through code.
 */
export interface FakeGdbServerOptions {
  port: number;
  board: FakeBoard;
  /** The flashed image (the fake board's flash.elf). */
  elfPath: string;
  /**
   * What the tool does when the debugger goes: OpenOCD with hilbench's gdb-detach handler resumes
   * and exits on any disconnect, OpenOCD without it does nothing; probe-rs resumes on `D` only.
   * Those two keep listening.
   */
  onDisconnect: 'resume-and-exit' | 'resume-on-detach' | 'nothing';
  /** One line on the tool's own output, as the real tool logs connections. */
  log: (line: string) => void;
}

const TARGET_XML =
  '<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target><architecture>arm</architecture>' +
  '<feature name="org.gnu.gdb.arm.m-profile">' +
  [...Array.from({ length: 13 }, (_, i) => `r${i}`), 'sp', 'lr', 'pc']
    .map((name) => `<reg name="${name}" bitsize="32" type="${name === 'sp' ? 'data_ptr' : name === 'pc' || name === 'lr' ? 'code_ptr' : 'uint32'}"/>`)
    .join('') +
  '<reg name="xpsr" bitsize="32"/></feature></target>';

/** Listens on 127.0.0.1:`port`; resolves once listening. */
export async function serveFakeGdb(options: FakeGdbServerOptions): Promise<net.Server> {
  const image = new Uint8Array(readFileSync(options.elfPath));
  const elf = parseElf(image);
  const segments = loadableSegments(elf).filter((s) => s.fileSizeBytes > 0);
  const readByte = (address: number) => {
    const s = segments.find((seg) => address >= seg.paddr && address < seg.paddr + seg.fileSizeBytes);
    return s ? image[s.offset + address - s.paddr]! : 0;
  };
  const readWord = (address: number) => (readByte(address) | (readByte(address + 1) << 8) | (readByte(address + 2) << 16) | (readByte(address + 3) << 24)) >>> 0;
  const vectors = segments[0]?.paddr ?? 0;
  const server = net.createServer((socket) => {
    options.log(`Info : accepting 'gdb' connection on tcp/${options.port}`);
    // A reset-halted Cortex-M: sp and pc from the vector table, Thumb bit in xPSR.
    const registers = new Array<number>(17).fill(0);
    registers[13] = readWord(vectors);
    registers[15] = readWord(vectors + 4) & ~1;
    registers[16] = 0x0100_0000;
    const reader = new RspReader();
    let running = false;
    let detached = false;
    const reply = (payload: string) => socket.write(`+${rspPacket(payload)}`);
    const answer = (payload: string): string | undefined => {
      const [verb] = /^[a-zA-Z?]+/.exec(payload) ?? [''];
      if (payload === '?') return 'T05';
      if (payload.startsWith('qSupported')) return 'PacketSize=4000;qXfer:features:read+;vContSupported-';
      if (payload.startsWith('qXfer:features:read:target.xml:')) {
        const [offset, length] = payload.split(':')[4]!.split(',').map((n) => parseInt(n, 16)) as [number, number];
        const part = TARGET_XML.slice(offset, offset + length);
        return `${offset + length >= TARGET_XML.length ? 'l' : 'm'}${part}`;
      }
      if (payload === 'qAttached') return '1';
      if (payload === 'g') return registers.map((r) => hexLittleEndian(r, 4)).join('');
      if (verb === 'p') return hexLittleEndian(registers[parseInt(payload.slice(1), 16)] ?? 0, 4);
      if (verb === 'm') {
        const [address, length] = payload.slice(1).split(',').map((n) => parseInt(n, 16)) as [number, number];
        return hexOfBytes(Array.from({ length: Math.min(length, 0x4000) }, (_, i) => readByte(address + i)));
      }
      if (verb === 'H' || verb === 'Z' || verb === 'z') return 'OK';
      if (payload === 's') {
        registers[15] = (registers[15]! + 2) >>> 0;
        return 'T05';
      }
      if (payload === 'c') {
        running = true;
        options.board.run();
        return undefined;
      }
      if (payload === 'D') {
        detached = true;
        return 'OK';
      }
      if (payload === 'k') {
        socket.end();
        return undefined;
      }
      return '';
    };
    socket.on('data', (data: Buffer) => {
      for (const event of reader.feed(data.toString('latin1'))) {
        if (event.kind === 'interrupt' && running) {
          running = false;
          options.board.halt();
          reply('T02');
        } else if (event.kind === 'packet') {
          const text = answer(event.payload);
          if (text !== undefined) reply(text);
          else socket.write('+');
          if (detached) socket.end();
        }
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      options.log(`Info : dropped 'gdb' connection`);
      // `catch resume`: a core already running runs on.
      if (options.onDisconnect === 'resume-and-exit') {
        if (!running) options.board.run();
        options.log('shutdown command invoked');
        server.close();
        process.exit(0);
      }
      if (options.onDisconnect === 'resume-on-detach' && detached && !running) options.board.run();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  options.log(`Info : Listening on port ${options.port} for gdb connections`);
  return server;
}
