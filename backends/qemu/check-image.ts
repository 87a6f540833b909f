import { type Board, elfMachineFor } from '../../boards/board-schema.js';
import { loadableSegments, machineName } from '../../core/elf.js';
import { BackendError, type FirmwareImage } from '../backend.js';

/**
 * Refuses, before any emulator starts, an image the board cannot run. This matters more for
 * emulators than anywhere else: QEMU happily loads a non-ARM ELF and then locks up, which would
 * be reported as a firmware crash instead of a wrong upload.
 */
export function checkImageForEmulator(image: FirmwareImage, board: Board): void {
  const expected = elfMachineFor[board.mcu.architecture];
  if (image.elf.machine !== expected) {
    throw new BackendError(
      'bad-image',
      `ELF machine ${machineName(image.elf.machine)} does not match ${board.id}'s architecture ${board.mcu.architecture} (${machineName(expected)})`,
    );
  }
  if (image.elf.type !== 2) throw new BackendError('bad-image', `the ELF is not an executable (e_type ${image.elf.type}, expected 2 = EXEC)`);
  if (loadableSegments(image.elf).length === 0) throw new BackendError('bad-image', 'the ELF has no loadable (PT_LOAD) segments');
}
