/**
 * Rewrites firmware/examples/manifest.json from the board catalog, the expectations in
 * firmware-manifest.ts and the committed ELFs (sha256, size). Run after build.sh:
 *
 *   npx tsx firmware/examples/update-manifest.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadBoardCatalog } from '../../boards/catalog.js';
import {
  expectedFirmware,
  type FirmwareManifest,
  firmwareDir,
  firmwareManifestSchema,
  firmwarePath,
  programsFor,
  sha256Hex,
} from './firmware-manifest.js';

const firmware = loadBoardCatalog().flatMap((board) =>
  programsFor(board.id).map((program) => {
    const expected = expectedFirmware(board, program);
    const bytes = readFileSync(firmwarePath(expected));
    return { ...expected, sha256: sha256Hex(bytes), sizeBytes: bytes.length };
  }),
);
const manifest: FirmwareManifest = firmwareManifestSchema.parse({
  version: 1,
  description: 'Example firmware per board: built by build.sh, checked by ci/check-firmware.ts (npm run check:firmware), conventions in docs/firmware.md.',
  firmware,
});
writeFileSync(path.join(firmwareDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`manifest.json: ${firmware.length} images\n`);
