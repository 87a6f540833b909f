import type { Board } from '../../boards/board-schema.js';
import { type Availability, type Backend, BackendError, type Device, throwIfCancelled } from '../backend.js';
import type { RenodeBackendOptions } from './renode-backend-options.js';
import { RENODE_INSTALL_HINT, resolveRenode } from './renode-command.js';
import { RenodeDevice } from './renode-device.js';

export { freeTcpPort } from './free-tcp-port.js';
export type { RenodeBackendOptions } from './renode-backend-options.js';

/**
 * The Renode backend (docs/backends/renode.md): a board with `backends.renode` opens as a
 * `RenodeDevice` (renode-device.ts), whose Renode process is started and stopped by
 * renode-session.ts. The model is described on `RenodeBackendOptions`.
 */
export class RenodeBackend implements Backend {
  readonly name = 'renode' as const;
  constructor(private readonly options: RenodeBackendOptions) {}

  async availability(board: Board): Promise<Availability> {
    if (!board.backends.renode) return { available: false, reason: `board ${board.id} has no Renode platform (backends.renode)` };
    const { command, found } = resolveRenode(this.options.renodePath, this.options.env?.PATH);
    if (!found) return { available: false, reason: `Renode not found (${command}): ${RENODE_INSTALL_HINT}` };
    return { available: true };
  }

  async open(board: Board, options: { signal?: AbortSignal } = {}): Promise<Device> {
    throwIfCancelled(options.signal, 'open');
    const availability = await this.availability(board);
    if (!availability.available) throw new BackendError('unavailable', `board ${board.id} cannot run on Renode: ${availability.reason}`);
    const { found } = resolveRenode(this.options.renodePath, this.options.env?.PATH);
    return new RenodeDevice(board, found!, this.options);
  }
}
