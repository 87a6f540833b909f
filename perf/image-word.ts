import { loadableSegments, parseElf } from '../core/elf.js';

/**
 * A copy of a bench image with one 4-byte word, found by its symbol, set to `value`: the
 * `compute_rounds` of `compute` / `compute-dual` (firmware/examples/arm/rp2040-compute.c) and the
 * `float_steps` of `float-heavy` (rp2040-float.c). The committed images run short (about 300 k and
 * 95 k instructions) so tests stay short; the bench runs longer ones so that a run's fixed costs
 * and V8's warm-up stay small beside what it measures (decisions 0735, 0820). The word is
 * initialised data, so its bytes sit in the file at the offset of the loadable segment that
 * holds it.
 */
export function withImageWord(bytes: Uint8Array, word: { symbol: string; value: number }): Uint8Array {
  const elf = parseElf(bytes);
  const symbol = elf.symbols.find((s) => s.name === word.symbol);
  if (!symbol || symbol.sizeBytes !== 4) throw new Error(`the image has no 4-byte ${word.symbol} symbol: is it one of the bench's images (rp2040-compute.c, rp2040-float.c)?`);
  const segment = loadableSegments(elf).find((s) => symbol.value >= s.vaddr && symbol.value + 4 <= s.vaddr + s.fileSizeBytes);
  if (!segment) throw new Error(`${word.symbol} (0x${symbol.value.toString(16)}) lies in no loadable segment's file bytes`);
  // A copy of its own from offset 0 (a Buffer's slice() is a view into the caller's, often pooled, memory).
  const copy = new Uint8Array(bytes);
  new DataView(copy.buffer, copy.byteOffset, copy.byteLength).setUint32(segment.offset + (symbol.value - segment.vaddr), word.value >>> 0, true);
  return copy;
}
