import { AVRUSART, CPU, usart0Config } from 'avr8js';
import { describe, expect, it } from 'vitest';
import { UsartTransmitter, usartCyclesPerChar } from './usart-transmitter.js';

const { UCSRA, UCSRB, UCSRC, UBRRL, UDR } = usart0Config;
const TXC = 0x40;
const UDRE = 0x20;
const U2X = 0x02;
const UDRIE = 0x20;
const TXEN = 0x08;
/** UBRR0 = 16 with U2X0: the Arduino core's 115200 (117647 baud), 17 * 8 cycles a bit, 10 bits. */
const FRAME_CYCLES = 17 * 8 * 10;

function setUp() {
  const cpu = new CPU(new Uint16Array(0x4000));
  new AVRUSART(cpu, usart0Config, 16_000_000);
  const starts: { value: number; atCycles: number }[] = [];
  const transmitter = new UsartTransmitter(cpu, usart0Config, (value, atCycles) => starts.push({ value, atCycles }));
  cpu.writeData(UBRRL, 16);
  cpu.writeData(UCSRA, U2X);
  cpu.writeData(UCSRB, TXEN);
  /** Lets simulated time pass with no instructions: clock events fire at their cycle. */
  const runTo = (cycles: number) => {
    while (cpu.cycles < cycles) {
      cpu.cycles++;
      cpu.tick();
    }
  };
  return { cpu, starts, transmitter, runTo };
}

describe('UsartTransmitter', () => {
  it('holds a second byte in UDR0 while the first shifts out, and sends it with no gap', () => {
    const { cpu, starts, transmitter, runTo } = setUp();
    cpu.writeData(UDR, 0x41);
    // The first byte moved to the shift register: the buffer is free again at once.
    expect(cpu.data[UCSRA]! & UDRE).toBe(UDRE);
    cpu.writeData(UDR, 0x42);
    expect(cpu.data[UCSRA]! & UDRE).toBe(0);
    // Written while UDRE0 is clear: the chip ignores it.
    cpu.writeData(UDR, 0x43);
    expect(transmitter.ignoredWrites).toBe(1);
    runTo(FRAME_CYCLES);
    expect(starts).toEqual([
      { value: 0x41, atCycles: 0 },
      { value: 0x42, atCycles: FRAME_CYCLES },
    ]);
    expect(cpu.data[UCSRA]! & (UDRE | TXC)).toBe(UDRE);
    runTo(2 * FRAME_CYCLES);
    expect(cpu.data[UCSRA]! & TXC).toBe(TXC);
  });

  it('keeps UDRE0 and TXC0 when the firmware writes UCSR0A, and clears TXC0 only by a written one', () => {
    const { cpu, runTo } = setUp();
    cpu.writeData(UDR, 0x41);
    runTo(FRAME_CYCLES);
    expect(cpu.data[UCSRA]!).toBe(UDRE | TXC | U2X);
    // What HardwareSerial::write does after each byte, minus the TXC0 bit.
    cpu.writeData(UCSRA, U2X);
    expect(cpu.data[UCSRA]!).toBe(UDRE | TXC | U2X);
    cpu.writeData(UCSRA, U2X | TXC);
    expect(cpu.data[UCSRA]!).toBe(UDRE | U2X);
  });

  it('keeps the data-register-empty interrupt pending while UDRE0 is set (a level, not an edge)', () => {
    const { cpu } = setUp();
    cpu.writeData(UCSRB, TXEN | UDRIE);
    expect(cpu.nextInterrupt).toBe(usart0Config.dataRegisterEmptyInterrupt);
    // avr8js keeps the queue private; read it to see which descriptor is pending.
    const pending = Reflect.get(cpu, 'pendingInterrupts') as ({ constant?: boolean } | null)[];
    expect(pending[usart0Config.dataRegisterEmptyInterrupt]?.constant).toBe(true);
    cpu.writeData(UDR, 0x41);
    cpu.writeData(UDR, 0x42);
    // The buffer is full: nothing pending until the first frame ends.
    expect(cpu.nextInterrupt).toBe(-1);
  });

  it('counts the frame format in the character time: 9 data bits, parity and 2 stop bits', () => {
    const { cpu } = setUp();
    expect(usartCyclesPerChar(cpu.data, usart0Config)).toBe(FRAME_CYCLES);
    // UCSZ0 = 7 (9 bits: UCSZ02 in UCSR0B), even parity (UPM01), two stop bits (USBS0).
    cpu.writeData(UCSRB, TXEN | 0x04);
    cpu.writeData(UCSRC, 0x06 | 0x20 | 0x08);
    expect(usartCyclesPerChar(cpu.data, usart0Config)).toBe(17 * 8 * (1 + 9 + 1 + 2));
  });
});
