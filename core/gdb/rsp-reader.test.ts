import { describe, expect, it } from 'vitest';
import { bytesOfHex, hexLittleEndian, rspChecksum, rspPacket } from './rsp-packet.js';
import { RspProtocolError, RspReader } from './rsp-reader.js';

describe('RSP framing', () => {
  it('frames a payload with its checksum and escapes the four special bytes', () => {
    expect(rspPacket('OK')).toBe('$OK#9a');
    expect(rspChecksum('qSupported')).toBe('37');
    const framed = rspPacket('a#b$c}d*');
    expect(framed).toBe(`$a}\x03b}\x04c}]d}\x0a#${rspChecksum('a}\x03b}\x04c}]d}\x0a')}`);
    expect(new RspReader().feed(framed)).toEqual([{ kind: 'packet', payload: 'a#b$c}d*', checksumOk: true, raw: framed }]);
  });

  it('parses packets split anywhere, acks, naks and interrupts', () => {
    const reader = new RspReader();
    const events = ['+$g#', '6', '7-', '\x03$m0,4#f', 'd'].flatMap((chunk) => reader.feed(chunk));
    expect(events.map((e) => (e.kind === 'packet' ? `${e.payload}:${e.checksumOk}` : e.kind))).toEqual(['ack', 'g:true', 'nak', 'interrupt', 'm0,4:true']);
  });

  it('holds back only the start of a packet whose end has not arrived', () => {
    const reader = new RspReader();
    expect(reader.feed('+$m0,4#')).toEqual([{ kind: 'ack' }]);
    expect(reader.held).toBe('$m0,4#');
    expect(reader.feed('fd+')).toMatchObject([{ kind: 'packet', payload: 'm0,4', raw: '$m0,4#fd' }, { kind: 'ack' }]);
    expect(reader.held).toBe('');
  });

  it('reports a wrong checksum as such (the protocol answers it with -), not as broken framing', () => {
    expect(new RspReader().feed('$g#00')).toMatchObject([{ kind: 'packet', payload: 'g', checksumOk: false }]);
  });

  it.each([
    ['garbage between packets', 'hello', /outside a packet/],
    ['a checksum field that is not hex', '$g#zz', /not two hex digits/],
    ['a packet start inside a packet', '$g$g#67', /inside a packet/],
  ])('refuses %s', (_what, input, message) => {
    expect(() => new RspReader().feed(input)).toThrow(RspProtocolError);
    expect(() => new RspReader().feed(input)).toThrow(message);
  });

  it('refuses a packet over the bound, before its end arrives, so nothing grows without limit', () => {
    const reader = new RspReader({ maxPacketBytes: 16 });
    expect(reader.feed('$0123456789')).toEqual([]);
    expect(() => reader.feed('abcdefgh')).toThrow(/longer than 16 bytes/);
    expect(() => new RspReader({ maxPacketBytes: 4 }).feed('$123456#00')).toThrow(/6 bytes, over the bound of 4/);
  });

  it('converts hex both ways', () => {
    expect(hexLittleEndian(0x1234, 4)).toBe('34120000');
    expect(Array.from(bytesOfHex('00ff10') ?? [])).toEqual([0, 255, 16]);
    expect(bytesOfHex('0')).toBeUndefined();
    expect(bytesOfHex('zz')).toBeUndefined();
  });
});
