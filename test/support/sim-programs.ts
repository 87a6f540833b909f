/**
 * Tiny test programs for the sim engines, assembled with GNU as (arm-none-eabi-as 2.40 for the
 * Cortex-M0+, avr-as 2.26 linked by avr-gcc for the ATmega328P) from the listings beside them, so
 * unit tests need no toolchain and each program does exactly one thing.
 */
import { EM_ARM, EM_AVR, parseElf } from '../../core/elf.js';
import type { SimImage } from '../../sim/sim-engine.js';
import { makeElf } from './make-elf.js';

const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

/**
 * A `SimImage` with PT_LOAD `segments` (entry at the first one's paddr) and empty named
 * `sections`, written by `makeElf`, the one in-memory ELF writer of the tests.
 */
export function elfImage(machine: number, segments: Array<{ paddr: number; data: Uint8Array }>, sections: string[] = []): SimImage {
  const bytes = makeElf({
    machine,
    entry: segments[0]?.paddr ?? 0,
    segments,
    sections: sections.map((name) => ({ name, data: new Uint8Array(0) })),
  });
  return { bytes, elf: parseElf(bytes) };
}

export const RP2040_FLASH = 0x10000000;

/**
 * An RP2040 flash image: vector table (SP 0x20001000, reset handler at +8) followed by `code`
 * assembled at offset 8; `handlers` place more code and point vector N at it.
 */
export function thumbProgram(code: string, handlers: Array<{ vector: number; offset: number; code: string }> = [], sections: string[] = []): SimImage {
  const flash = new Uint8Array(0x100);
  const v = new DataView(flash.buffer);
  v.setUint32(0, 0x20001000, true);
  v.setUint32(4, RP2040_FLASH + 8 + 1, true);
  flash.set(fromHex(code), 8);
  for (const h of handlers) {
    v.setUint32(h.vector * 4, RP2040_FLASH + h.offset + 1, true);
    flash.set(fromHex(h.code), h.offset);
  }
  return elfImage(EM_ARM, [{ paddr: RP2040_FLASH, data: flash }], sections);
}

/** Prints "hi\n" on UART0 (writes to UARTDR 0x40034000), then `bkpt #5`. */
export const THUMB_HELLO_BKPT_5 = '034968200860692008600a20086005be00400340';
/** `1: nop; b 1b`: busy for ever. */
export const THUMB_SPIN = '00bffde7';
/** `cpsid i; 1: wfi; b 1b`: sleeps for ever with nothing scheduled. */
export const THUMB_SLEEP_FOR_EVER = '72b630bffde7';
/** `movs r0,#0x20; mov r1,pc; adds r1,#6; bkpt 0xab; b .; .word 0x20026, 7`: semihosting SYS_EXIT_EXTENDED, status 7. */
export const THUMB_SEMIHOSTING_EXIT_7 = '202079460631abbefee7c0462600020007000000';
/** `nop; udf #1`: an undefined instruction. */
export const THUMB_UDF = 'c04601de';
/** `ldr r1,=0x30000000; ldr r0,[r1]; b .`: a read from an unmapped address. */
export const THUMB_BUS_ERROR = '01490868fee7000000000030';
/** `ldr r1,=0x40060000; ldr r0,[r1]; b .`: reads ROSC CTRL, a register rp2040js does not model. */
export const THUMB_UNMODELLED_READ = '01490868fee7000000000640';
/** `movs r0,#0x11; blx r0`: a call into the boot ROM at 0x10. */
export const THUMB_ROM_CALL = '11208047';
/**
 * Arms TIMER ALARM0 1000 µs ahead (TIMERAWL + 1000 -> ALARM0, INTE = 1, NVIC ISER bit 0), then
 * `1: wfi; b 1b`. With `THUMB_TIMER_ISR` at vector 16 (TIMER_IRQ_0), offset 0x48.
 */
export const THUMB_TIMER_WAKE = '0549886a054a8018086101208863044a106030bffde7000000400540e803000000e100e0';
/** Clears the alarm interrupt (INTR = 1), prints "T" on UART0, returns. */
export const THUMB_TIMER_ISR = '034901204863034954200860704700000040054000400340';

/** An ATmega328P program at flash address 0. */
export function avrProgram(code: string): SimImage {
  return elfImage(EM_AVR, [{ paddr: 0, data: fromHex(code) }]);
}

/**
 * UBRR0L = 8, UCSR0B = TXEN0; sends "hi\n" polling UDRE0, waits for TXC0, then `ldi r24,3; break`.
 */
export const AVR_HELLO_BREAK_3 = '08e00093c40008e00093c10018e60ad019e608d01ae006d00091c00006fffccf83e098950091c00005fffccf1093c6000895';
/** `ldi r24,9; cli; sleep`: stops with interrupts off. */
export const AVR_CLI_SLEEP_9 = '89e0f8948895';
/** `ldi r24,4; cli; 1: rjmp 1b`: how avr-libc's `_exit` ends. */
export const AVR_EXIT_LOOP_4 = '84e0f894ffcf';
/** `nop; jmp 0x1000`: jumps into erased flash. */
export const AVR_WILD_JUMP = '00000c940008';
/**
 * Timer0 at clk/1024 with TOIE0, `sei`, then `sleep` until the overflow handler (`inc r20; reti`)
 * has run three times; then `ldi r24,0; cli; sleep`.
 */
export const AVR_SLEEP_TIMER =
  '20c0' + '0000'.repeat(31) + '0cc005e005bd01e000936e00789488954330e9f780e0f894889543951895';
/** `ldi r16,5; out GPIOR1,r16; ldi r16,0xe7; out GPIOR2,r16; 1: rjmp 1b`: mailbox exit with 5. */
export const AVR_MAILBOX_EXIT_5 = '05e00abd07ee0bbdffcf';
/** `ldi r16,0xc5; out GPIOR2,r16; 1: rjmp 1b`: mailbox crash. */
export const AVR_MAILBOX_CRASH = '05ec0bbdffcf';
/** `ldi r16,0x80; out ACSR,r16; 1: rjmp 1b`: switches the analog comparator off, which avr8js does not model. */
export const AVR_WRITE_ACSR = '00e800bfffcf';
/**
 * USART0 echo: UBRR0L = 8, UCSR0B = RXEN0 | TXEN0, then for ever: poll RXC0, read UDR0, poll UDRE0,
 * write the byte back (`rx: lds r17,UCSR0A; sbrs r17,7; rjmp rx; lds r18,UDR0; tx: lds r17,UCSR0A;
 * sbrs r17,5; rjmp tx; sts UDR0,r18; rjmp rx`). Polls rather than sleeps: a sleeping simulator with
 * nothing scheduled jumps to the end of its run, before any input could come.
 */
export const AVR_ECHO = '08e00093c40008e10093c1001091c00017fffccf2091c6001091c00015fffccf2093c600f3cf';
/** UBRR0L = 8, UCSR0B = RXEN0, `sei`, then `1: rjmp 1b` without ever reading UDR0. */
export const AVR_RX_NEVER_READ = '08e00093c40000e10093c1007894ffcf';

/**
 * GPIO: GP15's pad input-enabled (PADS_BANK0 GPIO15 = 0x56), GP25 (the Pico's LED) and GP14 as SIO
 * outputs, GP25 high, then GP14 follows GP15 for ever (IO_BANK0 GPIOn_CTRL = 5, SIO GPIO_OE_SET,
 * GPIO_OUT_SET/CLR from GPIO_IN bit 15).
 */
export const THUMB_GPIO_FOLLOW =
  '0a48562101600a48052101600948016009480a4941620a4941610a4a43685b08134001d04261f9e78261f7e740c00140cc40014074400140000000d0004000020000000200400000';
/** GPIO: PB5 (D13, the LED) and PB4 (D12) outputs, PB5 high, then PB4 follows PD2 (D2) for ever. */
export const AVR_GPIO_FOLLOW = '00e304b900e205b94a9902c02c98fccf2c9afacf';
