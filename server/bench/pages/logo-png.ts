import { crc32, deflateSync } from 'node:zlib';

/**
 * The hilbench logo (a chip with pins and one lit LED) as a PNG, drawn in code so the repository
 * carries no binary asset and the page needs no external one. Served at `/logo.png`: the plugin
 * manifest's `logo_url` and the pages' icon.
 */

export const LOGO_SIZE_PX = 128;

type Rgba = readonly [number, number, number, number];
const BODY: Rgba = [0x24, 0x29, 0x2f, 0xff];
const PIN: Rgba = [0xa8, 0xb1, 0xbb, 0xff];
const LED: Rgba = [0x3f, 0xb9, 0x50, 0xff];
const MARK: Rgba = [0x57, 0x60, 0x6a, 0xff];

function pixelAt(x: number, y: number): Rgba | undefined {
  const inBody = x >= 28 && x < 100 && y >= 28 && y < 100;
  if (inBody) {
    const dx = x - 84;
    const dy = y - 84;
    if (dx * dx + dy * dy <= 49) return LED;
    const mx = x - 42;
    const my = y - 42;
    if (mx * mx + my * my <= 16) return MARK; // pin-1 marker
    return BODY;
  }
  // Eight pins per side, 4 px wide every 9 px, 14 px long.
  const onPinColumn = (v: number) => v >= 30 && v < 98 && (v - 30) % 9 < 4;
  if ((y >= 14 && y < 28) || (y >= 100 && y < 114)) return onPinColumn(x) ? PIN : undefined;
  if ((x >= 14 && x < 28) || (x >= 100 && x < 114)) return onPinColumn(y) ? PIN : undefined;
  return undefined;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData) >>> 0);
  return Buffer.concat([length, typeAndData, crc]);
}

/** Encodes the logo as an RGBA PNG of LOGO_SIZE_PX square. */
export function renderLogoPng(): Buffer {
  const size = LOGO_SIZE_PX;
  const raw = Buffer.alloc(size * (1 + size * 4));
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 4);
    raw[row] = 0; // filter type "none"
    for (let x = 0; x < size; x++) {
      const p = pixelAt(x, y);
      if (p) raw.set(p, row + 1 + x * 4);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // colour type RGBA
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
