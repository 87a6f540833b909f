/**
 * The RP2040's two inter-core FIFOs (datasheet §2.3.1.5, registers FIFO_ST, FIFO_WR and FIFO_RD
 * at SIO offsets 0x50, 0x54 and 0x58): core 0 writes what core 1 reads and the other way round,
 * eight 32-bit words each way. Each core sees its own side: VLD (its read FIFO holds data), RDY
 * (its write FIFO has room), and two sticky error flags, WOF (it wrote to a full FIFO; the word
 * is lost) and ROE (it read an empty one; it gets 0), cleared by writing 1s to FIFO_ST. A core's
 * SIO_IRQ_PROCn line is high while any of VLD, WOF or ROE is set on its side.
 */

/** FIFO_ST bits (datasheet §2.3.1.7). */
export const FIFO_ST_VLD = 1 << 0;
export const FIFO_ST_RDY = 1 << 1;
export const FIFO_ST_WOF = 1 << 2;
export const FIFO_ST_ROE = 1 << 3;
/** Words each FIFO holds. */
export const FIFO_DEPTH = 8;

/** SIO offsets of the FIFO registers. */
export const SIO_FIFO_ST = 0x50;
export const SIO_FIFO_WR = 0x54;
export const SIO_FIFO_RD = 0x58;

export type CoreIndex = 0 | 1;

export class InterCoreFifo {
  /** `inbox[n]`: the words core n reads (the other core wrote them), oldest first. */
  private readonly inbox: [number[], number[]] = [[], []];
  private readonly sticky = [0, 0];

  /**
   * @param onChange called after anything that may change a core's FIFO_ST (and so its IRQ
   *   line), with the core whose side changed.
   */
  constructor(private readonly onChange: (core: CoreIndex) => void) {}

  /** FIFO_ST as core `core` reads it. */
  status(core: CoreIndex): number {
    const other = core === 0 ? 1 : 0;
    return (this.inbox[core].length > 0 ? FIFO_ST_VLD : 0) | (this.inbox[other].length < FIFO_DEPTH ? FIFO_ST_RDY : 0) | this.sticky[core]!;
  }

  /** Whether core `core`'s SIO_IRQ_PROC line is high. */
  irqLevel(core: CoreIndex): boolean {
    return this.inbox[core].length > 0 || this.sticky[core] !== 0;
  }

  /** Words waiting for core `core`. */
  pending(core: CoreIndex): number {
    return this.inbox[core].length;
  }

  /** FIFO_WR from core `core`: the word goes to the other core, or is lost and WOF set when its FIFO is full. */
  write(core: CoreIndex, value: number): void {
    const other = core === 0 ? 1 : 0;
    const target = this.inbox[other];
    if (target.length >= FIFO_DEPTH) {
      this.sticky[core]! |= FIFO_ST_WOF;
      this.onChange(core);
      return;
    }
    target.push(value >>> 0);
    this.onChange(other);
    // The writer's RDY may have dropped; its IRQ line does not depend on it.
  }

  /** FIFO_RD from core `core`: the oldest word, or 0 with ROE set when there is none. */
  read(core: CoreIndex): number {
    const word = this.inbox[core].shift();
    if (word === undefined) {
      this.sticky[core]! |= FIFO_ST_ROE;
      this.onChange(core);
      return 0;
    }
    this.onChange(core);
    return word;
  }

  /** A write to FIFO_ST from core `core`: 1s in WOF and ROE clear them. */
  clearSticky(core: CoreIndex, value: number): void {
    this.sticky[core]! &= ~(value & (FIFO_ST_WOF | FIFO_ST_ROE));
    this.onChange(core);
  }

  /** Empties what core `core` reads (what the boot ROM does before core 1 waits for a launch). */
  drain(core: CoreIndex): void {
    this.inbox[core].length = 0;
    this.onChange(core);
  }
}
