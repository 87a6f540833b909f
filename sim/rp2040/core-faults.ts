import type { RP2040 } from 'rp2040js';
import type { EngineHalt } from '../sim-engine.js';

/**
 * What the RP2040 does where rp2040js calls back instead: `bkpt` and `udf` (its `onBreak` hook)
 * and the errors and warnings it logs. rp2040js has no HardFault; where the real core would take
 * one, the engine halts with `crashed`. Exits follow ARM semihosting (SYS_EXIT,
 * SYS_EXIT_EXTENDED) as under QEMU (docs/firmware.md). `core` names the core in messages once
 * core 1 has run.
 */

type Core = RP2040['core'];

/** Thrown from inside an instruction to unwind rp2040js when the real chip would fault. */
export class HardFault extends Error {}

/** ARM semihosting (ARM IHI 0093): `bkpt 0xab`, operation in r0, argument in r1. */
const SEMIHOSTING_BKPT = 0xab;
const SYS_EXIT = 0x18;
const SYS_EXIT_EXTENDED = 0x20;
const ADP_STOPPED_APPLICATION_EXIT = 0x20026;

export const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/** The halt a `bkpt`/`udf` means, or undefined when execution goes on (an unmodelled semihosting call returns -1). */
export function breakHalt(chip: RP2040, core: Core, code: number, where: string, noteUnmodelled: (message: string) => void): EngineHalt | undefined {
  // rp2040js reports UDF through the same hook as BKPT; on the chip UDF is a HardFault.
  // The PC has moved past the 16-bit opcode (both UDF encodings start with a 16-bit word).
  const opcode = chip.readUint16(core.PC - 2);
  if (opcode >> 8 !== 0xbe) {
    return { reason: 'crashed', message: `HardFault${where}: undefined instruction (udf #${code}) near PC ${hex(core.PC)}` };
  }
  if (code === SEMIHOSTING_BKPT) {
    const op = core.registers[0]!;
    const arg = core.registers[1]!;
    if (op === SYS_EXIT) {
      // AArch32 SYS_EXIT passes the reason itself; QEMU maps ApplicationExit to 0, anything else to 1.
      return { reason: 'exited', exitCode: arg === ADP_STOPPED_APPLICATION_EXIT ? 0 : 1 };
    }
    if (op === SYS_EXIT_EXTENDED) {
      const reason = chip.readUint32(arg);
      const subcode = chip.readUint32(arg + 4);
      return { reason: 'exited', exitCode: reason === ADP_STOPPED_APPLICATION_EXIT ? subcode | 0 : 1 };
    }
    noteUnmodelled(`semihosting operation 0x${op.toString(16)} is not modelled (only SYS_EXIT and SYS_EXIT_EXTENDED); it returned -1`);
    core.registers[0] = 0xffffffff;
    return undefined;
  }
  // Without a debugger a BKPT escalates to HardFault on the chip.
  return { reason: 'crashed', message: `HardFault${where}: bkpt #${code} with no debugger attached, near PC ${hex(core.PC)}` };
}

/**
 * Turns what rp2040js logs into what the chip does: a thrown `HardFault` for what the chip
 * faults on, otherwise a note of an unmodelled access.
 */
export function libraryMessage(core: Core, where: string, level: 'warn' | 'error', component: string, message: string, noteUnmodelled: (message: string) => void): void {
  const pc = hex(core.PC);
  if (/not implemented yet/.test(message)) throw new HardFault(`HardFault${where}: undefined instruction near PC ${pc} (${component}: ${message})`);
  // rp2040js logs errors for what the chip faults on, such as an unaligned word access.
  if (level === 'error') throw new HardFault(`HardFault${where} near PC ${pc}: ${component}: ${message}`);
  const invalid = /(?:invalid memory address|undefined address): ([0-9a-f]+)/.exec(message);
  if (invalid) {
    const address = parseInt(invalid[1]!, 16);
    const fetch = Math.abs(address - core.PC) <= 4;
    throw new HardFault(
      fetch
        ? `HardFault${where}: instruction fetch from ${hex(address)}, outside ROM, flash and SRAM`
        : `HardFault${where}: bus error near PC ${pc}: access to unmapped address ${hex(address)}`,
    );
  }
  noteUnmodelled(`${component}: ${message}`);
}
