import { type BackendName, backendNames, type Board } from '../boards/board-schema.js';
import type { Backend } from '../backends/backend.js';
import { MockBackend } from '../backends/mock/mock-backend.js';
import { loadBenchFile } from '../backends/probe/bench-file.js';
import { ProbeBackend } from '../backends/probe/probe-backend.js';
import type { AutomaticCheckListener } from '../backends/probe/automatic-health-checks.js';
import type { QuarantineStore } from '../backends/probe/quarantine-store.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { RenodeBackend } from '../backends/renode/renode-backend.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import type { Clock } from '../core/clock.js';

export interface BackendRegistryOptions {
  clock: Clock;
  boards: readonly Board[];
  /** Bench file of real boards (docs/bench-file.md); without it there is no probe backend. */
  benchFile?: string;
  /** RP2040 B1 boot ROM for Pico SDK images (docs/backends/sim.md). */
  rp2040BootromPath?: string;
  qemuBinary?: string;
  renodePath?: string;
  /** Board health of the probe backend, persisted by the server. */
  quarantineStore?: QuarantineStore;
  /** Told after every automatic health check of a quarantined real board (for the server log). */
  onAutomaticHealthCheck?: AutomaticCheckListener;
}

/**
 * How each backend named in `backendNames` (boards/board-schema.ts) is built; a name added there
 * does not compile until it has a line here. Undefined: not offered on this host.
 */
const backendFactories: { [N in BackendName]: (options: BackendRegistryOptions) => Backend | undefined } = {
  mock: () => new MockBackend(),
  sim: (options) => new SimBackend({ clock: options.clock, rp2040BootromPath: options.rp2040BootromPath }),
  qemu: (options) => new QemuBackend({ clock: options.clock, qemuBinary: options.qemuBinary }),
  renode: (options) => new RenodeBackend({ clock: options.clock, renodePath: options.renodePath }),
  // Real boards exist only where a bench file says what is attached.
  probe: (options) =>
    options.benchFile
      ? new ProbeBackend({
          bench: loadBenchFile(options.benchFile),
          clock: options.clock,
          boards: options.boards,
          quarantineStore: options.quarantineStore,
          onAutomaticHealthCheck: options.onAutomaticHealthCheck,
        })
      : undefined,
};

/**
 * Every backend this host can offer, by name. Construction is cheap and starts nothing:
 * whether a backend can really run a board (QEMU installed, probe attached) is its
 * `availability()`, asked when the server resolves boards.
 */
export function createBackends(options: BackendRegistryOptions): Partial<Record<BackendName, Backend>> {
  const backends: Partial<Record<BackendName, Backend>> = {};
  for (const name of backendNames) {
    const backend = backendFactories[name](options);
    if (backend) backends[name] = backend;
  }
  return backends;
}
