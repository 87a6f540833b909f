import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../../core/package-root.js';

/** Where the package keeps each board's example firmware (`firmware/examples/<board>/hello.elf`, docs/firmware.md). */
export const exampleFirmwareDir = path.join(packageRoot(), 'firmware', 'examples');

/**
 * The example `hello.elf` of each board of `boardIds` that has one, read once and kept (a few KiB
 * each): what `GET /examples/{board}/hello.elf` serves (issue 31). Only catalog ids are looked up,
 * so no request names a path of its own.
 */
export function exampleFirmwareOf(boardIds: readonly string[], dir = exampleFirmwareDir): (board: string) => Uint8Array | undefined {
  const known = new Set(boardIds);
  const cache = new Map<string, Uint8Array | undefined>();
  return (board) => {
    if (!known.has(board)) return undefined;
    if (!cache.has(board)) {
      let bytes: Uint8Array | undefined;
      try {
        bytes = new Uint8Array(readFileSync(path.join(dir, board, 'hello.elf')));
      } catch {
        bytes = undefined; // this board ships no example (or the package left it out)
      }
      cache.set(board, bytes);
    }
    return cache.get(board);
  };
}
