import { loadableSegments, parseElf } from '../core/elf.js';

/**
 * A copy of the `compute` / `compute-dual` image (firmware/examples/arm/rp2040-compute.c) with its
 * `compute_rounds` word set to `rounds`: the committed image runs 4000 rounds (about 300 k
 * instructions, 23 ms of host time) so tests stay short, and the bench runs a longer one so a run's
 * fixed costs (thread wake-ups, the request and answer) stay under 1 % of what it measures
 * (decision 0735). The word is initialised data, so its bytes sit in the file at the offset of
 * the loadable segment that holds it.
 */
export function withComputeRounds(bytes: Uint8Array, rounds: number): Uint8Array {
  const elf = parseElf(bytes);
  const symbol = elf.symbols.find((s) => s.name === 'compute_rounds');
  if (!symbol || symbol.sizeBytes !== 4) throw new Error('the image has no 4-byte compute_rounds symbol: is it built from rp2040-compute.c?');
  const segment = loadableSegments(elf).find((s) => symbol.value >= s.vaddr && symbol.value + 4 <= s.vaddr + s.fileSizeBytes);
  if (!segment) throw new Error(`compute_rounds (0x${symbol.value.toString(16)}) lies in no loadable segment's file bytes`);
  // A copy of its own from offset 0 (a Buffer's slice() is a view into the caller's, often pooled, memory).
  const copy = new Uint8Array(bytes);
  new DataView(copy.buffer, copy.byteOffset, copy.byteLength).setUint32(segment.offset + (symbol.value - segment.vaddr), rounds >>> 0, true);
  return copy;
}
