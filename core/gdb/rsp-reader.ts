import { rspChecksum } from './rsp-packet.js';

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

  /** Parses `chunk` (latin1 text, one character per byte); throws `RspProtocolError` on broken framing. */
  feed(chunk: string): RspEvent[] {
    this.buffer += chunk;
    const events: RspEvent[] = [];
    for (;;) {
      const first = this.buffer[0];
      if (first === undefined) return events;
      if (first === '+' || first === '-' || first === '\x03') {
        this.buffer = this.buffer.slice(1);
        events.push(first === '+' ? { kind: 'ack' } : first === '-' ? { kind: 'nak' } : { kind: 'interrupt' });
        continue;
      }
      if (first !== '$') {
        throw new RspProtocolError(`byte 0x${first.charCodeAt(0).toString(16).padStart(2, '0')} outside a packet (expected $, +, - or 0x03)`);
      }
      const hash = this.buffer.indexOf('#');
      if (hash < 0) {
        if (this.buffer.length - 1 > this.maxPacketBytes) {
          throw new RspProtocolError(`a packet longer than ${this.maxPacketBytes} bytes (no # within the bound)`);
        }
        return events;
      }
      if (hash - 1 > this.maxPacketBytes) throw new RspProtocolError(`a packet of ${hash - 1} bytes, over the bound of ${this.maxPacketBytes}`);
      if (this.buffer.length < hash + 3) return events;
      const body = this.buffer.slice(1, hash);
      const sum = this.buffer.slice(hash + 1, hash + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(sum)) throw new RspProtocolError(`checksum field "${printable(sum)}" is not two hex digits`);
      if (body.includes('$')) throw new RspProtocolError('a $ inside a packet (an unescaped start of packet)');
      const raw = this.buffer.slice(0, hash + 3);
      this.buffer = this.buffer.slice(hash + 3);
      events.push({ kind: 'packet', payload: unescape(body), checksumOk: rspChecksum(body) === sum.toLowerCase(), raw });
    }
  }
}

/** Undoes `}` escaping; run-length encoding (`*`) is only ever sent by stubs, never by GDB, and is left as is. */
function unescape(body: string): string {
  return body.replace(/}([\s\S])/g, (_m, c: string) => String.fromCharCode(c.charCodeAt(0) ^ 0x20));
}

function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
