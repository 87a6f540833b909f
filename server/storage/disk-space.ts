import { statfs } from 'node:fs/promises';
import { Gauge, type Registry } from 'prom-client';

/**
 * The free space of the disk under a service's data directory, for `GET /api/v1/health` and
 * `/metrics` (issue 27): the disk counts as full below `fullBelowBytes`, where the next upload or
 * database page may no longer fit. Read from the file system (statfs) at each look: space freed by
 * an operator shows at once, with nothing to reset.
 */
export class DiskSpace {
  constructor(
    private readonly dir: string,
    private readonly options: { fullBelowBytes: number } = { fullBelowBytes: DEFAULT_FULL_BELOW_BYTES },
  ) {}

  /** Bytes an unprivileged writer may still use, and whether that is below the bound; undefined free bytes when the disk could not be read. */
  async look(): Promise<{ freeBytes: number | undefined; full: boolean }> {
    try {
      const stats = await statfs(this.dir);
      const freeBytes = Number(stats.bavail) * Number(stats.bsize);
      return { freeBytes, full: freeBytes < this.options.fullBelowBytes };
    } catch {
      // A data directory that cannot be read is a fault of its own (the service says so elsewhere), not a full disk.
      return { freeBytes: undefined, full: false };
    }
  }

  /** `hilbench_storage_free_bytes` and `hilbench_storage_full` in `registry`, read when scraped. */
  register(registry: Registry): void {
    const look = () => this.look();
    new Gauge({
      name: 'hilbench_storage_free_bytes',
      help: "Bytes still free on the disk under this replica's data directory.",
      registers: [registry],
      async collect() {
        const { freeBytes } = await look();
        if (freeBytes !== undefined) this.set(freeBytes);
      },
    });
    new Gauge({
      name: 'hilbench_storage_full',
      help: `1 while the disk under this replica's data directory has less than ${this.options.fullBelowBytes} bytes free (uploads are answered 507), else 0.`,
      registers: [registry],
      async collect() {
        this.set((await look()).full ? 1 : 0);
      },
    });
  }
}

/** Below 1 MiB free the disk counts as full: a typical firmware image or a few database pages no longer fit. */
export const DEFAULT_FULL_BELOW_BYTES = 1024 * 1024;
