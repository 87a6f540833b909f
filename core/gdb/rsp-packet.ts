/**
 * GDB remote serial protocol (RSP) framing, as GDB's manual states it ("Overview" of "Remote
 * Protocol"): a packet is `$payload#cc`, where `cc` is the modulo-256 sum of the payload bytes in
 * two lower-case hex digits; `}` escapes `#`, `$`, `}` and `*` (the byte XOR 0x20); `+` and `-`
 * acknowledge; a lone 0x03 byte interrupts the target. Text is handled as latin1, one character
 * per byte, because payloads carry binary data (`X`, `vFile`).
 */

/** Byte 0x03, sent outside any packet: "stop the target" (GDB's Ctrl-C). */
export const RSP_INTERRUPT = '\x03';

/** Modulo-256 sum of the bytes of `payload` (latin1 text), as two lower-case hex digits. */
export function rspChecksum(payload: string): string {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) sum = (sum + payload.charCodeAt(i)) & 0xff;
  return sum.toString(16).padStart(2, '0');
}

/** `payload` framed as one packet, with `#`, `$`, `}` and `*` escaped. */
export function rspPacket(payload: string): string {
  const escaped = payload.replace(/[#$}*]/g, (c) => `}${String.fromCharCode(c.charCodeAt(0) ^ 0x20)}`);
  return `$${escaped}#${rspChecksum(escaped)}`;
}

/** The bytes of `text` as lower-case hex, two digits per byte (latin1). */
export function hexOfText(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) out += (text.charCodeAt(i) & 0xff).toString(16).padStart(2, '0');
  return out;
}

/** Bytes as lower-case hex, two digits each. */
export function hexOfBytes(bytes: ArrayLike<number>): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += (bytes[i]! & 0xff).toString(16).padStart(2, '0');
  return out;
}

/** The bytes a hex string spells; undefined when it is not an even number of hex digits. */
export function bytesOfHex(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return undefined;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** `value` as `widthBytes` little-endian bytes in hex (how GDB wants registers of a little-endian target). */
export function hexLittleEndian(value: number, widthBytes: number): string {
  let out = '';
  for (let i = 0; i < widthBytes; i++) out += (Math.floor(value / 2 ** (8 * i)) & 0xff).toString(16).padStart(2, '0');
  return out;
}
