import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFirmwareManifest } from '../firmware/examples/firmware-manifest.js';
import { loadBoardCatalog } from './catalog.js';

/**
 * The two hand-kept documents a new board must touch (README, "How to add a board") agree with the
 * catalog and the firmware manifest, so adding a board without them fails here, not in a reader's hands.
 */
const repo = path.resolve(import.meta.dirname, '..');
const catalog = loadBoardCatalog();

describe('docs that describe the catalog', () => {
  it('docs/boards.md has one table row per catalog board, with its MCU, and none for a board that is not there', () => {
    const rows = readFileSync(path.join(repo, 'docs/boards.md'), 'utf8')
      .split('\n')
      .map((line) => /^\| `([^`]+)` \| `([^`]+)` \|/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ board: m[1], mcu: m[2] }));
    const expected = catalog.map((b) => ({ board: b.id, mcu: b.mcu.id }));
    const byBoard = (a: { board?: string }, b: { board?: string }) => String(a.board).localeCompare(String(b.board));
    expect(rows.sort(byBoard)).toEqual(expected.sort(byBoard));
  });

  it("docs/firmware.md's count of committed images is the manifest's", () => {
    const text = readFileSync(path.join(repo, 'docs/firmware.md'), 'utf8');
    const stated = /\((\d+) today: (\d+) boards/.exec(text);
    expect(stated, 'docs/firmware.md no longer says "(N today: M boards ..."').not.toBeNull();
    const manifest = loadFirmwareManifest();
    expect({ images: Number(stated?.[1]), boards: Number(stated?.[2]) }).toEqual({
      images: manifest.firmware.length,
      boards: new Set(manifest.firmware.map((f) => f.board)).size,
    });
  });
});
