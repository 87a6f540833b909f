import { existsSync, readFileSync } from 'node:fs';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import type { Clock } from '../../core/clock.js';
import { type Availability, type Backend, BackendError, type Device, type HealthCheckOutcome, type FirmwareImage, type JobBudget, NANOS_PER_SECOND, throwIfCancelled } from '../backend.js';
import { loadFirmwareImage } from '../image-check.js';
import { findExecutable } from '../process/find-executable.js';
import { type AutomaticCheckListener, AutomaticHealthChecks } from './automatic-health-checks.js';
import { type BenchBoard, type BenchFile, BenchFileError, type BenchInstance, readHealthCheckImage } from './bench-file.js';
import type { ProbeTarget } from './probe-commands.js';
import { checkImageForProbe, ProbeDevice } from './probe-device.js';
import { afterFailure, afterSuccess, type BoardHealth, InMemoryQuarantineStore, type QuarantineStore } from './quarantine-store.js';
import { type SerialBinding, SerialLink } from './serial-link.js';

export interface ProbeBackendOptions {
  bench: BenchFile;
  clock: Clock;
  /** OpenOCD executable; default `openocd` from PATH. */
  openocdPath?: string;
  /** probe-rs executable; default `probe-rs` from PATH. */
  probeRsPath?: string;
  /** serialport binding; default the platform's. Unit tests pass `SerialPortMock.binding`. */
  serialBinding?: SerialBinding;
  /** Board health, persisted by the server; default in memory. */
  quarantineStore?: QuarantineStore;
  /** Boards the bench file may name; default the shipped catalog. */
  boards?: readonly Board[];
  /** Extra environment for the tools (e.g. `OPENOCD_SCRIPTS`). */
  toolEnv?: Record<string, string>;
  /** Told after each automatic health check (bench file `healthCheck.retryAfterSeconds`), e.g. to log it. */
  onAutomaticHealthCheck?: AutomaticCheckListener;
}

/**
 * Real boards through OpenOCD or probe-rs, UART through `serialport` (docs/backends/probe.md).
 * Attachment comes from the bench file; board health (quarantine after consecutive
 * infrastructure failures) from the `QuarantineStore`.
 */
export class ProbeBackend implements Backend {
  readonly name = 'probe' as const;
  private readonly store: QuarantineStore;
  private readonly boards: ReadonlyMap<string, Board>;
  private readonly targets = new Map<string, ProbeTarget>();
  private readonly inUse = new Set<string>();
  private readonly automatic: AutomaticHealthChecks;

  constructor(private readonly options: ProbeBackendOptions) {
    this.store = options.quarantineStore ?? new InMemoryQuarantineStore();
    const boards = options.boards ?? loadBoardCatalog();
    this.boards = new Map(boards.map((b) => [b.id, b]));
    for (const [id, attachment] of Object.entries(options.bench.boards)) {
      const board = this.boards.get(id);
      if (!board) {
        throw new BenchFileError(`${options.bench.source}: boards.${id}: no board "${id}" in the catalog (known: ${[...this.boards.keys()].join(', ')})`);
      }
      this.targets.set(id, resolveTarget(options.bench.source, board, attachment));
      if (attachment.healthCheck) checkHealthCheckImage(options.bench.source, board, attachment.healthCheck.elf);
      // A pool of several physical boards (decision 0550): each instance is its own target.
      for (const [i, instance] of this.poolOf(id).entries()) {
        this.targets.set(instanceKey(id, i + 1), resolveTarget(options.bench.source, board, instance));
        if (instance.healthCheck) checkHealthCheckImage(options.bench.source, board, instance.healthCheck.elf);
      }
    }
    this.automatic = new AutomaticHealthChecks({
      clock: options.clock,
      check: (boardId) => this.healthCheck(boardId),
      isQuarantined: async (boardId) => (await this.store.get(boardId)).quarantine !== undefined,
      policy: (boardId) => {
        const check = options.bench.boards[boardId]?.healthCheck;
        return check?.retryAfterSeconds === undefined ? undefined : { retryAfterMs: check.retryAfterSeconds * 1000, maxChecks: check.maxAutomaticChecks };
      },
      onCheck: options.onAutomaticHealthCheck,
    });
    // A quarantine kept in a persistent store across a restart gets its automatic checks too.
    void this.resumeAutomaticHealthChecks().catch(() => undefined);
  }

  /** Schedules automatic health checks for every board the store says is quarantined (done once at construction). */
  async resumeAutomaticHealthChecks(): Promise<void> {
    for (const boardId of Object.keys(this.options.bench.boards)) {
      if ((await this.store.get(boardId)).quarantine && !this.automatic.scheduled(boardId)) this.automatic.quarantined(boardId);
    }
  }

  /** Whether an automatic health check is scheduled for `boardId` (for tests and `/admin`). */
  automaticHealthCheckScheduled(boardId: string): boolean {
    return this.automatic.scheduled(boardId);
  }

  /** Stops scheduled automatic health checks; the server calls it when it stops. */
  close(): void {
    this.automatic.close();
  }

  /** The physical boards of `board` here: its bench-file instances when it is a list, else one (decision 0550). */
  instanceCount(board: Board): number {
    return Math.max(1, this.poolOf(board.id).length);
  }

  async availability(board: Board): Promise<Availability> {
    const attachment = this.options.bench.boards[board.id];
    if (!attachment) return { available: false, reason: this.notAttached(board.id) };
    const tool = this.toolPath(attachment);
    if (!findExecutable(tool)) {
      const install = attachment.probe.kind === 'openocd' ? 'apt-get install -y openocd' : 'see https://probe.rs/docs/getting-started/installation/';
      return { available: false, reason: `${tool} is not installed or not executable on this host (${install}), needed for ${board.id}` };
    }
    // Existence only: listing ports would spawn udevadm (see serial-link.ts). A pool is available
    // while one of its boards is plugged in; a job on one that is not fails with the reason and
    // counts against that instance (decision 0551).
    const paths = this.poolOf(board.id).length > 0 ? this.poolOf(board.id).map((i) => i.serial.path) : [attachment.serial.path];
    if (!this.options.serialBinding && !paths.some((p) => existsSync(p))) {
      return { available: false, reason: `serial device ${paths.join(', ')} is missing: is ${board.id} plugged in?` };
    }
    // The quarantine last: a quarantined board that is also unplugged says so, and a worker then
    // knows a release alone will not bring it back (docs/lab.md).
    const health = await this.store.get(board.id);
    if (health.quarantine) return { available: false, reason: health.quarantine.reason };
    return { available: true };
  }

  async open(board: Board, options: { signal?: AbortSignal; instance?: string } = {}): Promise<Device> {
    const health = await this.store.get(board.id);
    if (health.quarantine) throw new BackendError('unavailable', `board ${board.id}: ${health.quarantine.reason}`);
    return this.openDevice(board, options.signal, options.instance);
  }

  /**
   * The bench file's timeouts for `board` as a job budget: a job deadline never cuts a tool short,
   * so a hung probe fails with the tool's own timeout (exit status, output) instead.
   */
  jobBudgetMs(board: Board): JobBudget {
    const attachment = this.options.bench.boards[board.id];
    if (!attachment) return { flashMs: 0, resetMs: 0 };
    // A pool's instances may differ (a slower adapter): a job's budget is the largest.
    const budgets = [attachment, ...this.poolOf(board.id)].map(({ timeouts: { serialOpenMs, flashMs, resetMs, killGraceMs } }) => ({
      flashMs: serialOpenMs + flashMs + killGraceMs,
      resetMs: resetMs + killGraceMs,
    }));
    return { flashMs: Math.max(...budgets.map((b) => b.flashMs)), resetMs: Math.max(...budgets.map((b) => b.resetMs)) };
  }

  /** Current health of `boardId` (for `/admin` and `/api/v1/boards`). */
  health(boardId: string): Promise<BoardHealth> {
    return this.store.get(boardId);
  }

  /** An administrator puts `boardId` back in service: clears quarantine and the failure count. */
  async release(boardId: string): Promise<void> {
    this.attachmentOf(boardId);
    await this.store.put(boardId, afterSuccess());
    this.automatic.released(boardId);
  }

  /**
   * Flashes the bench file's health-check firmware on `boardId` (quarantined or not) and waits for
   * its `expect` regex. Passing releases the board; failing leaves it as it is (an infrastructure
   * failure counts as one more). A pool of several (decision 0606) is checked one instance at a
   * time: `instance` names the entry, whose own firmware runs on it; its health is the server's
   * (decision 0551), so nothing is released or counted here.
   */
  async healthCheck(boardId: string, options: { signal?: AbortSignal; instance?: string } = {}): Promise<HealthCheckOutcome> {
    const pooled = this.poolOf(boardId).length > 0;
    if (pooled && options.instance === undefined) {
      throw new BackendError(
        'unavailable',
        `${this.options.bench.source}: boards.${boardId} is a pool of ${this.poolOf(boardId).length} boards: a health check runs on one of its instances (POST /admin/boards/{instance}/health-check)`,
      );
    }
    const { attachment, entry } = pooled ? this.entryOf(boardId, options.instance) : { attachment: this.attachmentOf(boardId), entry: undefined };
    const named = pooled ? `instance ${options.instance} of ${boardId} (entry "${entry}")` : boardId;
    const check = attachment?.healthCheck;
    if (!check) throw new BackendError('unavailable', `${this.options.bench.source}: ${pooled ? `the entry of instance ${options.instance} in boards.${boardId}` : `boards.${boardId}`} has no healthCheck firmware`);
    const image = readImage(check.elf);
    const pattern = new RegExp(check.expect);
    const board = this.boards.get(boardId)!;
    const decoder = new TextDecoder();
    let uartText = '';
    const device = await this.openDevice(board, options.signal, options.instance);
    try {
      device.onUart((chunk) => {
        uartText += decoder.decode(chunk.bytes, { stream: true });
      });
      await device.flash(image, options);
      const stop = await device.run(Math.round(check.withinSeconds * NANOS_PER_SECOND), { ...options, until: () => pattern.test(uartText) });
      if (stop.reason !== 'until') {
        return { passed: false, reason: `health check on ${named}: /${check.expect}/ did not appear within ${check.withinSeconds} s`, uartText };
      }
      if (!pooled) await this.release(boardId);
      return { passed: true, uartText, elapsedNanos: stop.elapsedNanos };
    } catch (err) {
      if (!(err instanceof BackendError)) throw err;
      return { passed: false, reason: `health check on ${named} failed: ${err.message}`, uartText };
    } finally {
      await device.close();
    }
  }

  private async openDevice(board: Board, signal: AbortSignal | undefined, instance?: string): Promise<ProbeDevice> {
    const { key, attachment, pooled, entry } = this.entryOf(board.id, instance);
    const probe = this.targets.get(key);
    if (!attachment || !probe) throw new BackendError('unavailable', this.notAttached(board.id));
    const named = pooled ? `instance ${instance} of board ${board.id} (entry "${entry}")` : `board ${board.id}`;
    if (this.inUse.has(key)) throw new BackendError('unavailable', `${named} is already open on this bench (one user at a time)`);
    throwIfCancelled(signal, `opening ${board.id}`);
    this.inUse.add(key);
    const failed = async (error: BackendError) => {
      // An instance of a pool: its health is the server's, per instance (decision 0551); the
      // board's record here would take every instance out at once.
      if (pooled) return;
      const before = await this.store.get(board.id);
      const after = afterFailure(before, error.message, this.options.bench.quarantineAfterFailures, this.options.clock.nowMs());
      await this.store.put(board.id, after);
      if (!before.quarantine && after.quarantine) this.automatic.quarantined(board.id);
    };
    try {
      const link = await SerialLink.open({
        path: attachment.serial.path,
        baudRate: attachment.serial.baudRate,
        binding: this.options.serialBinding,
        clock: this.options.clock,
        openTimeoutMs: attachment.timeouts.serialOpenMs,
        signal,
      });
      return new ProbeDevice({
        board,
        attachment,
        probe,
        toolPath: this.toolPath(attachment),
        toolEnv: this.options.toolEnv,
        link,
        clock: this.options.clock,
        ...(pooled ? { label: `${board.id} (entry "${entry}")` } : {}),
        hooks: {
          failed,
          // A run that works resets the count, but only a health check or an administrator ends
          // a quarantine: a board whose UART is dead still flashes and resets "successfully".
          succeeded: async () => {
            if (!pooled && !(await this.store.get(board.id)).quarantine) await this.store.put(board.id, afterSuccess());
          },
          closed: () => this.inUse.delete(key),
        },
      });
    } catch (err) {
      this.inUse.delete(key);
      if (err instanceof BackendError && err.isInfrastructure) await failed(err);
      throw err;
    }
  }

  /** The bench file's instances of `boardId` when it lists several, else none. */
  private poolOf(boardId: string): readonly BenchInstance[] {
    return this.options.bench.pools[boardId] ?? [];
  }

  /**
   * The bench-file entry a job's instance names: entry n of a list is the server's `<board>.<n>@<worker>`
   * (decision 0550); a board of one entry is the board itself, whatever the instance.
   */
  private entryOf(boardId: string, instance: string | undefined): { key: string; attachment: BenchBoard | undefined; pooled: boolean; entry?: string } {
    const pool = this.poolOf(boardId);
    if (pool.length === 0) return { key: boardId, attachment: this.options.bench.boards[boardId], pooled: false };
    const n = Number(/^[a-z0-9-]+\.(\d+)@/.exec(instance ?? '')?.[1] ?? NaN);
    if (!Number.isInteger(n) || n < 1 || n > pool.length) {
      throw new BackendError('unavailable', `board ${boardId} is a pool of ${pool.length} boards on this bench (${this.options.bench.source}): a job names one of its instances ${boardId}.1@… to ${boardId}.${pool.length}@…, not ${instance ?? 'none'}`);
    }
    return { key: instanceKey(boardId, n), attachment: pool[n - 1], pooled: true, entry: pool[n - 1]!.instance };
  }

  private attachmentOf(boardId: string): BenchBoard {
    const attachment = this.options.bench.boards[boardId];
    if (!attachment) throw new BackendError('unavailable', this.notAttached(boardId));
    return attachment;
  }

  private notAttached(boardId: string): string {
    const listed = Object.keys(this.options.bench.boards);
    return `board ${boardId} is not attached to this bench (${this.options.bench.source} lists ${listed.length > 0 ? listed.join(', ') : 'no boards'})`;
  }

  private toolPath(attachment: BenchBoard): string {
    return attachment.probe.kind === 'openocd' ? (this.options.openocdPath ?? 'openocd') : (this.options.probeRsPath ?? 'probe-rs');
  }
}

/** The key of instance n of a bench-file pool among the targets and the boards in use. */
function instanceKey(boardId: string, n: number): string {
  return `${boardId}#${n}`;
}

/**
 * The health-check image must run on its board through a probe (architecture, flash-only
 * segments): checked when the backend is built, so a wrong image is a bench-file error naming the
 * file and field rather than a failed check that quarantines a healthy board.
 */
function checkHealthCheckImage(source: string, board: Board, elf: string): void {
  const field = `${source}: boards.${board.id}.healthCheck.elf`;
  const image = readHealthCheckImage(elf, field);
  try {
    checkImageForProbe(board, image);
  } catch (err) {
    if (!(err instanceof BackendError)) throw err;
    throw new BenchFileError(`${field}: ${elf} cannot run on ${board.id}: ${err.message}`);
  }
}

/** Combines the bench file's attachment with the board file's probe keys. */
function resolveTarget(source: string, board: Board, attachment: BenchBoard): ProbeTarget {
  const { probe } = attachment;
  if (probe.kind === 'openocd') {
    const target = probe.target ?? board.backends.probe?.openocdTarget;
    if (!target) throw new BenchFileError(`${source}: boards.${board.id}.probe.target: required (the board file names no openocdTarget)`);
    return { ...probe, target, resetMethod: attachment.resetMethod };
  }
  const chip = probe.chip ?? board.backends.probe?.probeRsChip;
  if (!chip) throw new BenchFileError(`${source}: boards.${board.id}.probe.chip: required (the board file names no probeRsChip)`);
  return { ...probe, chip };
}

function readImage(file: string): FirmwareImage {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(readFileSync(file));
  } catch (err) {
    throw new BackendError('unavailable', `health-check firmware ${file} cannot be read: ${(err as Error).message}`);
  }
  return loadFirmwareImage(bytes);
}
