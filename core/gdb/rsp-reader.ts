/** One unit of what a peer sent: a packet (payload unescaped), an acknowledgement, or an interrupt. */
export type RspEvent =
  | { kind: 'packet'; payload: string; checksumOk: boolean; raw: string }
  | { kind: 'ack' }
  | { kind: 'nak' }
  | { kind: 'interrupt' };

/** A peer broke the framing (bytes outside a packet, a bad checksum field, a packet over the bound). */
export class RspProtocolError extends Error {
  override readonly name = 'RspProtocolError';
}

/** Default bound on a packet's payload, in bytes: GDB sends at most the `PacketSize` a stub advertises (QEMU 4 KiB, rp2040js 16 KiB). */
export const DEFAULT_MAX_PACKET_BYTES = 64 * 1024;

/**
 * An incremental RSP parser for one stream: feed it bytes as they arrive, get whole events back.
 * Bounded: a packet whose payload grows past `maxPacketBytes` before its `#` is an error, so a
 * peer cannot make us buffer without end. Anything but `$`, `+`, `-` or 0x03 between packets is
 * an error too (GDB never sends it), as is a checksum field that is not two hex digits. A wrong
 * checksum is not: the protocol answers it with `-` and the sender retransmits.
 */
export class RspReader {
  private buffer = '';
  private readonly maxPacketBytes: number;

  constructor(options: { maxPacketBytes?: number } = {}) {
    this.maxPacketBytes = options.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES;
  }

  /** What is held back: the start of a packet whose end has not arrived yet ('' most of the time). */
  get held(): string {
    return this.buffer;
  }

  /** Parses `chunk` (latin1 text, one character per byte); throws `RspProtocolError` on broken framing. */
  feed(chunk: string): RspEvent[] {
    // Read by index and cut once at the end: a debugger's chunk is usually one whole packet or an
    // ack, and the bridge parses every one of them on a register read's round trip.
    const buffer = this.buffer.length === 0 ? chunk : this.buffer + chunk;
    const events: RspEvent[] = [];
    let at = 0;
    for (;;) {
      if (at >= buffer.length) break;
      const first = buffer[at]!;
      if (first === '+' || first === '-' || first === '\x03') {
        at++;
        events.push(first === '+' ? { kind: 'ack' } : first === '-' ? { kind: 'nak' } : { kind: 'interrupt' });
        continue;
      }
      if (first !== '$') {
        this.buffer = buffer.slice(at);
        throw new RspProtocolError(`byte 0x${first.charCodeAt(0).toString(16).padStart(2, '0')} outside a packet (expected $, +, - or 0x03)`);
      }
      const hash = buffer.indexOf('#', at);
      if (hash < 0) {
        if (buffer.length - at - 1 > this.maxPacketBytes) {
          this.buffer = buffer.slice(at);
          throw new RspProtocolError(`a packet longer than ${this.maxPacketBytes} bytes (no # within the bound)`);
        }
        break;
      }
      const size = hash - at - 1;
      if (size > this.maxPacketBytes) {
        this.buffer = buffer.slice(at);
        throw new RspProtocolError(`a packet of ${size} bytes, over the bound of ${this.maxPacketBytes}`);
      }
      if (buffer.length < hash + 3) break;
      const high = hexValue(buffer.charCodeAt(hash + 1));
      const low = hexValue(buffer.charCodeAt(hash + 2));
      if (high < 0 || low < 0) {
        this.buffer = buffer.slice(at);
        throw new RspProtocolError(`checksum field "${printable(buffer.slice(hash + 1, hash + 3))}" is not two hex digits`);
      }
      const inner = buffer.indexOf('$', at + 1);
      if (inner >= 0 && inner < hash) {
        this.buffer = buffer.slice(at);
        throw new RspProtocolError('a $ inside a packet (an unescaped start of packet)');
      }
      let sum = 0;
      for (let i = at + 1; i < hash; i++) sum = (sum + buffer.charCodeAt(i)) & 0xff;
      const body = buffer.slice(at + 1, hash);
      const raw = buffer.slice(at, hash + 3);
      at = hash + 3;
      events.push({ kind: 'packet', payload: body.includes('}') ? unescape(body) : body, checksumOk: sum === high * 16 + low, raw });
    }
    this.buffer = at === 0 ? buffer : buffer.slice(at);
    return events;
  }
}

/** The value of one hex digit's character code; -1 when it is not one. */
function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x61 + 10;
  if (code >= 0x41 && code <= 0x46) return code - 0x41 + 10;
  return -1;
}

/** Undoes `}` escaping; run-length encoding (`*`) is only ever sent by stubs, never by GDB, and is left as is. */
function unescape(body: string): string {
  return body.replace(/}([\s\S])/g, (_m, c: string) => String.fromCharCode(c.charCodeAt(0) ^ 0x20));
}

function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
