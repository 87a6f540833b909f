import { readFileSync } from 'node:fs';
import { loadBoardCatalog } from '../../../boards/catalog.js';
import { RenodeBackend, type RenodeBackendOptions } from '../../../backends/renode/renode-backend.js';
import type { Device } from '../../../backends/backend.js';
import { systemClock } from '../../../core/clock.js';
import { firmwarePath, loadFirmwareManifest } from '../../../firmware/examples/firmware-manifest.js';
import { firmwareImage } from '../../support/make-elf.js';
import { renodeStandinPath } from './standin-path.js';

/** The Renode backend driven against the stand-in, shared by the backend's failure-path tests. */

/** The board the stand-in models. */
export const board = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;
const manifest = loadFirmwareManifest();

/** One of the example firmware images built for the board. */
export const image = (program: 'hello' | 'crash') =>
  firmwareImage(new Uint8Array(readFileSync(firmwarePath(manifest.firmware.find((f) => f.board === board.id && f.program === program)!))));

/** A Renode backend on the stand-in, with `env` added to this process's (RENODE_STANDIN_FAULT and friends). */
export function backend(env: Record<string, string> = {}, options: Partial<RenodeBackendOptions> = {}) {
  return new RenodeBackend({ clock: systemClock, renodePath: renodeStandinPath, env: { ...process.env, ...env }, ...options });
}

/** The promise's rejection, or undefined when it fulfils. */
export const caught = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

/** The Renode process of a device's current session (it throws when there is none). */
export function pidOf(device: Device): number {
  const pid = (device as unknown as { pid: number | undefined }).pid;
  if (pid === undefined) throw new Error('device has no Renode process');
  return pid;
}
