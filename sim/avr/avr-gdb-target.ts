import { bytesOfHex, hexLittleEndian, hexOfBytes, rspPacket } from '../../core/gdb/rsp-packet.js';
import { protocolErrorMessage } from '../../core/gdb/debugger-slot.js';
import { DEFAULT_MAX_PACKET_BYTES, RspProtocolError, RspReader } from '../../core/gdb/rsp-reader.js';
import type { AvrEngine } from '../avr-engine.js';
import { haltStopReply, RUNNING_PACKET_REPLY, runUntilDebugStop, type SimGdbIo, type SimGdbTarget } from '../sim-gdb-target.js';

/**
 * avr-gdb's view of an AVR (GDB's avr-tdep.c): 35 registers, r0..r31 and SREG one byte each, SP
 * two bytes, PC four bytes holding the byte address; `g` sends them in that order (39 bytes).
 * Memory is one address space: program memory from 0, data memory (registers, I/O, SRAM) from
 * 0x800000, EEPROM from 0x810000.
 */
const REG_SREG = 32;
const REG_SP = 33;
const REG_PC = 34;
const DATA_BASE = 0x800000;
const EEPROM_BASE = 0x810000;
const SREG_ADDRESS = 0x5f;
/** Largest `m`/`M` the stub serves, in bytes; advertised as PacketSize (hex) so GDB never asks for more. */
const PACKET_SIZE = 0x1000;
/** One single step may sleep at most this long (an AVR `sleep` with nothing to wake it). */
const STEP_BOUND_NANOS = 1_000_000;

/**
 * A GDB stub for the ATmega328P on avr8js, written for hilbench (avr8js has none): registers,
 * memory, software breakpoints (`Z0`, kept by the stub so flash is never patched), continue,
 * single step, interrupt, detach and kill. Stop replies: `S05` at a breakpoint or after a step,
 * `S02` after an interrupt, `W` when the firmware exits, `S0b` when it crashes.
 */
export class AvrGdbTarget implements SimGdbTarget {
  // The debugger slot in front bounds a packet at DEFAULT_MAX_PACKET_BYTES: a tighter bound here
  // (GDB sends at most PACKET_SIZE) would end the session on a packet the slot let through.
  private readonly reader = new RspReader({ maxPacketBytes: DEFAULT_MAX_PACKET_BYTES });
  private readonly breakpoints = new Set<number>();
  private acks = true;
  private continuing = false;
  private interruptRequested = false;
  private closed = false;

  constructor(
    private readonly engine: AvrEngine,
    private readonly io: SimGdbIo,
  ) {}

  get running(): boolean {
    return this.continuing;
  }

  receive(text: string): void {
    if (this.closed) return;
    let events;
    try {
      events = this.reader.feed(text);
    } catch (err) {
      if (!(err instanceof RspProtocolError)) throw err;
      // The debugger reads why as its last bytes, as it does from the slot's own gate.
      this.reply(`E.${protocolErrorMessage(err.message)}`);
      this.end({ how: 'protocol-error', message: err.message });
      return;
    }
    for (const event of events) {
      if (this.closed) return;
      if (event.kind === 'interrupt') {
        if (this.continuing) this.interruptRequested = true;
        else this.reply('S02');
      } else if (event.kind === 'packet') {
        if (!event.checksumOk) {
          if (this.acks) this.io.send('-');
          continue;
        }
        if (this.acks) this.io.send('+');
        // In all-stop mode the debugger sends nothing but 0x03 while the target runs; anything else is refused, never dropped.
        if (this.continuing) this.reply(RUNNING_PACKET_REPLY);
        else this.handle(event.payload);
      }
    }
  }

  close(): void {
    this.closed = true;
  }

  private handle(packet: string): void {
    const { cpu } = this.engine;
    const command = packet[0];
    if (packet === 'QStartNoAckMode') {
      this.reply('OK');
      this.acks = false;
      return;
    }
    if (packet.startsWith('qSupported')) return this.reply(`PacketSize=${PACKET_SIZE.toString(16)};QStartNoAckMode+`);
    if (packet === 'qAttached') return this.reply('1');
    if (packet === '?') return this.reply('S05');
    if (command === 'H') return this.reply('OK');
    if (command === 'g') return this.reply(this.registers());
    if (command === 'G') return this.reply(this.writeRegisters(packet.slice(1)));
    if (command === 'p') {
      const n = parseInt(packet.slice(1), 16);
      const value = this.register(n);
      return this.reply(value ?? 'E01');
    }
    if (command === 'P') return this.reply(this.writeRegister(packet.slice(1)));
    if (command === 'm') return this.reply(this.readMemory(packet.slice(1)));
    if (command === 'M') return this.reply(this.writeMemory(packet.slice(1)));
    if (command === 'Z' || command === 'z') return this.reply(this.breakpoint(packet));
    if (command === 'c') {
      if (packet.length > 1) cpu.pc = parseInt(packet.slice(1), 16) >>> 1;
      void this.continue();
      return;
    }
    if (command === 's') {
      if (packet.length > 1) cpu.pc = parseInt(packet.slice(1), 16) >>> 1;
      return this.reply(this.step());
    }
    if (command === 'D') {
      this.reply('OK');
      return this.end({ how: 'detached' });
    }
    if (packet === 'k') return this.end({ how: 'killed' });
    if (packet.startsWith('vKill')) {
      this.reply('OK');
      return this.end({ how: 'killed' });
    }
    // Everything else (vCont, X, qXfer, tracepoints, threads) is "not supported": GDB falls back.
    this.reply('');
  }

  private registers(): string {
    const { cpu } = this.engine;
    return hexOfBytes(cpu.data.subarray(0, 32)) + hexLittleEndian(cpu.data[SREG_ADDRESS]!, 1) + hexLittleEndian(cpu.SP, 2) + hexLittleEndian(cpu.pc * 2, 4);
  }

  private register(n: number): string | undefined {
    const { cpu } = this.engine;
    if (n >= 0 && n < 32) return hexLittleEndian(cpu.data[n]!, 1);
    if (n === REG_SREG) return hexLittleEndian(cpu.data[SREG_ADDRESS]!, 1);
    if (n === REG_SP) return hexLittleEndian(cpu.SP, 2);
    if (n === REG_PC) return hexLittleEndian(cpu.pc * 2, 4);
    return undefined;
  }

  private writeRegisters(hex: string): string {
    const bytes = bytesOfHex(hex);
    if (!bytes || bytes.length < 39) return 'E01';
    const { cpu } = this.engine;
    cpu.data.set(bytes.subarray(0, 32), 0);
    cpu.data[SREG_ADDRESS] = bytes[32]!;
    cpu.SP = bytes[33]! | (bytes[34]! << 8);
    cpu.pc = (bytes[35]! | (bytes[36]! << 8) | (bytes[37]! << 16)) >>> 1;
    return 'OK';
  }

  private writeRegister(args: string): string {
    const [index, hex] = args.split('=');
    const n = parseInt(index ?? '', 16);
    const bytes = bytesOfHex(hex ?? '');
    if (!bytes || !Number.isInteger(n)) return 'E01';
    const value = bytes.reduceRight((acc, b) => acc * 256 + b, 0);
    const { cpu } = this.engine;
    if (n >= 0 && n < 32) cpu.data[n] = value & 0xff;
    else if (n === REG_SREG) cpu.data[SREG_ADDRESS] = value & 0xff;
    else if (n === REG_SP) cpu.SP = value & 0xffff;
    else if (n === REG_PC) cpu.pc = value >>> 1;
    else return 'E01';
    return 'OK';
  }

  /** The bytes `address`..`address+length` address, or undefined when any of them is outside flash and data memory. */
  private memory(address: number, length: number): { bytes: Uint8Array; offset: number } | undefined {
    const { cpu } = this.engine;
    if (!Number.isInteger(address) || !Number.isInteger(length) || length < 0 || length > PACKET_SIZE) return undefined;
    if (address + length <= cpu.progBytes.length) return { bytes: cpu.progBytes, offset: address };
    // Data memory is read and written raw, without the peripherals' hooks: a debugger looking at
    // UDR0 must not take the received byte away from the firmware.
    if (address >= DATA_BASE && address < EEPROM_BASE && address - DATA_BASE + length <= cpu.data.length) return { bytes: cpu.data, offset: address - DATA_BASE };
    return undefined;
  }

  private readMemory(args: string): string {
    const [address, length] = args.split(',').map((v) => parseInt(v, 16));
    const at = this.memory(address ?? NaN, length ?? NaN);
    if (!at) return 'E01';
    return hexOfBytes(at.bytes.subarray(at.offset, at.offset + length!));
  }

  private writeMemory(args: string): string {
    const match = /^([0-9a-fA-F]+),([0-9a-fA-F]+):([0-9a-fA-F]*)$/.exec(args);
    if (!match) return 'E01';
    const length = parseInt(match[2]!, 16);
    const data = bytesOfHex(match[3]!);
    const at = this.memory(parseInt(match[1]!, 16), length);
    if (!at || !data || data.length !== length) return 'E01';
    at.bytes.set(data, at.offset);
    return 'OK';
  }

  /** `Z0`/`z0` (software breakpoints) only; other kinds get the empty "not supported" reply. */
  private breakpoint(packet: string): string {
    const match = /^([Zz])0,([0-9a-fA-F]+),[0-9a-fA-F]+$/.exec(packet);
    if (!match) return '';
    const word = parseInt(match[2]!, 16) >>> 1;
    if (match[1] === 'Z') this.breakpoints.add(word);
    else this.breakpoints.delete(word);
    return 'OK';
  }

  private step(): string {
    const { engine } = this;
    const halt = engine.advance(engine.nanos + STEP_BOUND_NANOS, { maxInstructions: 1 });
    this.drainUart();
    return halt ? haltStopReply(halt) : 'S05';
  }

  private async continue(): Promise<void> {
    const { engine } = this;
    this.continuing = true;
    this.interruptRequested = false;
    const stop = await runUntilDebugStop({
      slice: (targetNanos) => {
        const halt = engine.advance(targetNanos, { stopAtWords: this.breakpoints });
        return { halt, breakpoint: this.breakpoints.has(engine.cpu.pc) };
      },
      nanos: () => engine.nanos,
      takeUart: () => engine.takeUartOutput({ partial: true }),
      io: this.io,
      stopRequested: () => (this.closed ? 'closed' : this.interruptRequested ? 'interrupted' : undefined),
    });
    this.continuing = false;
    if (stop.kind === 'closed') return;
    this.reply(stop.kind === 'halted' ? haltStopReply(stop.halt) : stop.kind === 'interrupted' ? 'S02' : 'S05');
  }

  private drainUart() {
    for (let chunk = this.engine.takeUartOutput({ partial: true }); chunk; chunk = this.engine.takeUartOutput({ partial: true })) this.io.onUart(chunk);
  }

  private reply(payload: string) {
    if (!this.closed) this.io.send(rspPacket(payload));
  }

  private end(end: Parameters<SimGdbIo['onEnd']>[0]) {
    if (this.closed) return;
    this.closed = true;
    this.io.onEnd(end);
  }
}
