import { loadableSegments } from '../core/elf.js';
import type { SimImage } from './sim-engine.js';
import { SimError } from './sim-error.js';

/** A memory of the simulated chip that firmware bytes may be placed in. */
export interface LoadTarget {
  /** Region name as in the MCU file, for messages ("flash", "sram"). */
  name: string;
  /** Address of `bytes[0]` in the ELF's physical (load) address space. */
  start: number;
  bytes: Uint8Array;
}

/** Where a segment's file bytes went. */
export interface PlacedSegment {
  target: string;
  paddr: number;
  sizeBytes: number;
}

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

/** Where each segment of an image goes, checked against the memories and not yet written (`planSegments`). */
export type SegmentPlan = ReadonlyArray<{ target: LoadTarget; offset: number; source: Uint8Array; paddr: number }>;

/**
 * Copies the file bytes of every PT_LOAD segment to its physical address (`paddr`), as a flash
 * programmer would: `.data` initialisers go to flash at their load address, not to RAM at their
 * run address. Segments without file bytes (`.bss`) are skipped. Checks every segment before
 * writing any, so a refused image changes nothing; throws `SimError('bad-image')` naming the
 * segment and the memories it could have gone to.
 */
export function loadSegments(image: SimImage, targets: readonly LoadTarget[]): PlacedSegment[] {
  return placeSegments(planSegments(image, targets));
}

/** Checks where every segment of `image` goes (see `loadSegments`) without writing anything; throws `SimError('bad-image')`. */
export function planSegments(image: SimImage, targets: readonly LoadTarget[]): SegmentPlan {
  const segments = loadableSegments(image.elf).filter((s) => s.fileSizeBytes > 0);
  if (segments.length === 0) throw new SimError('bad-image', 'the ELF has no loadable (PT_LOAD) segments with bytes to place');
  return segments.map((segment, index) => {
    const end = segment.paddr + segment.fileSizeBytes;
    const target = targets.find((t) => segment.paddr >= t.start && end <= t.start + t.bytes.length);
    if (!target) {
      const where = targets.map((t) => `${t.name} ${hex(t.start)}..${hex(t.start + t.bytes.length)}`).join(', ');
      throw new SimError(
        'bad-image',
        `segment ${index} (${segment.fileSizeBytes} bytes at load address ${hex(segment.paddr)}..${hex(end)}) lies outside the memory this chip can be loaded into (${where})`,
      );
    }
    return {
      target,
      offset: segment.paddr - target.start,
      source: image.bytes.subarray(segment.offset, segment.offset + segment.fileSizeBytes),
      paddr: segment.paddr,
    };
  });
}

/** Writes a plan's bytes into its memories. */
export function placeSegments(plan: SegmentPlan): PlacedSegment[] {
  return plan.map(({ target, offset, source, paddr }) => {
    target.bytes.set(source, offset);
    return { target: target.name, paddr, sizeBytes: source.length };
  });
}
