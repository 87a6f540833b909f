import type { CPU, usart0Config } from 'avr8js';

/** avr8js does not export these types from its package entry; they are the parameters it takes. */
type AVRInterruptConfig = Parameters<CPU['setInterruptFlag']>[0];
type USARTConfig = typeof usart0Config;

/** UCSRnA bits (ATmega328P datasheet DS40002061, §20.11.2 / §24.12.2 UCSRnA). */
const UCSRA_RXC = 0x80;
const UCSRA_TXC = 0x40;
const UCSRA_UDRE = 0x20;
const UCSRA_FE = 0x10;
const UCSRA_DOR = 0x08;
const UCSRA_UPE = 0x04;
const UCSRA_U2X = 0x02;
const UCSRA_MPCM = 0x01;
/** Status bits the firmware can only read; a write to UCSRnA leaves them alone. */
const UCSRA_READ_ONLY = UCSRA_RXC | UCSRA_UDRE | UCSRA_FE | UCSRA_DOR | UCSRA_UPE;
const UCSRB_UDRIE = 0x20;
const UCSRB_TXCIE = 0x40;
const UCSRB_TXEN = 0x08;
const UCSRB_UCSZ2 = 0x04;
const UCSRC_UPM1 = 0x20;
const UCSRC_USBS = 0x08;
const UCSRC_UCSZ = 0x06;

/**
 * Cycles one frame takes on the wire: start bit, 5-9 data bits, optional parity, 1-2 stop bits,
 * at (UBRR + 1) * 16 cycles a bit, or * 8 with U2X (datasheet §20.3.1, table 20-1).
 */
export function usartCyclesPerChar(data: Uint8Array, config: USARTConfig): number {
  const ubrr = ((data[config.UBRRH]! & 0x0f) << 8) | data[config.UBRRL]!;
  const cyclesPerBit = (ubrr + 1) * (data[config.UCSRA]! & UCSRA_U2X ? 8 : 16);
  const ucsz = ((data[config.UCSRC]! & UCSRC_UCSZ) >> 1) | (data[config.UCSRB]! & UCSRB_UCSZ2);
  const dataBits = ucsz === 7 ? 9 : Math.min(ucsz, 3) + 5;
  const parityBits = data[config.UCSRC]! & UCSRC_UPM1 ? 1 : 0;
  const stopBits = data[config.UCSRC]! & UCSRC_USBS ? 2 : 1;
  return cyclesPerBit * (1 + dataBits + parityBits + stopBits);
}

/**
 * The USART transmitter as the ATmega328P has it (datasheet §20.6, "Data Transmission"): UDRn is
 * a buffer in front of the shift register. A byte written while the shift register is idle moves
 * there at once and UDREn is set again, so a second byte can wait in UDRn and follows the first
 * on the wire with no gap; TXCn is set only when the shift register runs empty.
 *
 * avr8js 0.21 has no buffer: it keeps UDREn clear for a whole character after every write, so an
 * interrupt-driven sender (the Arduino core's HardwareSerial) loses its interrupt latency on every
 * byte: 5 % slow at 115200 baud. It also clears every status bit (UDREn, RXCn) whenever the
 * firmware writes UCSRnA, which the Arduino core does after each byte. This class replaces
 * avr8js's UDRn and UCSRnA write hooks; avr8js keeps the receiver and the other registers.
 */
export class UsartTransmitter {
  private readonly udre: AVRInterruptConfig;
  private readonly txc: AVRInterruptConfig;
  private shifting = false;
  private buffered: number | undefined;
  /** Bytes written to UDRn while it was full or the transmitter was off: the chip ignores them. */
  ignoredWrites = 0;

  constructor(
    private readonly cpu: CPU,
    private readonly config: USARTConfig,
    /** Called when a byte's start bit goes out, with the cycle count of that moment. */
    private readonly onWireStart: (value: number, atCycles: number) => void,
  ) {
    const { UCSRA, UCSRB } = config;
    // UDREn is a level: the interrupt stays pending while the buffer is empty (constant).
    this.udre = { address: config.dataRegisterEmptyInterrupt, flagRegister: UCSRA, flagMask: UCSRA_UDRE, enableRegister: UCSRB, enableMask: UCSRB_UDRIE, constant: true };
    this.txc = { address: config.txCompleteInterrupt, flagRegister: UCSRA, flagMask: UCSRA_TXC, enableRegister: UCSRB, enableMask: UCSRB_TXCIE };
    cpu.writeHooks[config.UDR] = (value) => {
      this.write(value);
      return true;
    };
    cpu.writeHooks[UCSRA] = (value, oldValue) => {
      // TXCn is cleared by writing a one to it; U2Xn and MPCMn are plain bits; the rest read only.
      const txc = oldValue & UCSRA_TXC & ~value;
      cpu.data[UCSRA] = (oldValue & UCSRA_READ_ONLY) | txc | (value & (UCSRA_U2X | UCSRA_MPCM));
      if (value & UCSRA_TXC) cpu.clearInterrupt(this.txc, false);
      return true;
    };
    // avr8js's UCSRnB hook queues its own UDRE interrupt, which is cleared when taken (an edge);
    // queue ours in its place, so the flag stays set until UDRn is written.
    const avr8jsUcsrb = cpu.writeHooks[UCSRB];
    cpu.writeHooks[UCSRB] = (value, oldValue, address, mask) => {
      const handled = avr8jsUcsrb?.(value, oldValue, address, mask);
      if (value & UCSRB_UDRIE && cpu.data[UCSRA]! & UCSRA_UDRE) cpu.queueInterrupt(this.udre);
      return handled;
    };
  }

  private write(value: number) {
    const { cpu, config } = this;
    if (!(cpu.data[config.UCSRB]! & UCSRB_TXEN) || !(cpu.data[config.UCSRA]! & UCSRA_UDRE)) {
      this.ignoredWrites++;
      return;
    }
    if (this.shifting) {
      this.buffered = value;
      cpu.clearInterrupt(this.udre);
      return;
    }
    this.shiftOut(value, cpu.cycles);
  }

  /** Starts `value` on the wire at `atCycles`; the buffer is free again at once. */
  private shiftOut(value: number, atCycles: number) {
    const { cpu } = this;
    this.shifting = true;
    this.onWireStart(value, atCycles);
    const frameCycles = usartCyclesPerChar(cpu.data, this.config);
    const endCycles = atCycles + frameCycles;
    cpu.setInterruptFlag(this.udre);
    cpu.addClockEvent(() => this.frameDone(endCycles), endCycles - cpu.cycles);
  }

  /** The stop bit is out: the buffered byte follows at once, else the transmitter goes idle. */
  private frameDone(endCycles: number) {
    const next = this.buffered;
    this.shifting = false;
    if (next === undefined) {
      this.cpu.setInterruptFlag(this.txc);
      return;
    }
    this.buffered = undefined;
    this.shiftOut(next, endCycles);
  }
}
