import type { Board, BackendName } from '../boards/board-schema.js';
import type { ElfFile } from '../core/elf.js';
import type { DebuggerEvents } from '../core/gdb/debugger-slot.js';
import type { PinReading } from '../core/pins.js';
import type { JobFailureKind } from '../wire/job-failure-kinds.js';
import type { DebugLegAddress } from '../clients/bench/debug-leg.js';

/**
 * The one backend interface. A backend is "something that can flash, reset, run and capture" a
 * board; mock, sim, qemu, renode and probe all implement it, and one contract suite
 * (test/contract/backend-contract.ts) holds them to the same behaviour.
 */

/** A parsed, validated firmware image. */
export interface FirmwareImage {
  readonly bytes: Uint8Array;
  /** Lower-case hex SHA-256 of `bytes`. */
  readonly sha256: string;
  readonly elf: ElfFile;
}

/**
 * Which clock a device's time is measured in. `simulated`: time of the emulated chip, which
 * advances only while it runs (sim, mock, and QEMU with icount). `wall`: host time (QEMU without
 * icount, Renode in real-time mode, real boards).
 */
export type TimeBase = 'simulated' | 'wall';

export interface UartChunk {
  /** Nanoseconds since reset was released, in the device's time base. */
  atNanos: number;
  bytes: Uint8Array;
}

export type Availability = { available: true } | { available: false; reason: string };

/** Why `Device.run` returned. `elapsedNanos` counts from reset release, in the device's time base. */
export type RunStop =
  | { reason: 'elapsed'; elapsedNanos: number }
  | { reason: 'until'; elapsedNanos: number }
  | { reason: 'exited'; exitCode: number; elapsedNanos: number }
  | { reason: 'crashed'; message: string; elapsedNanos: number };

export interface RunOptions {
  signal?: AbortSignal;
  /** Checked whenever UART bytes arrive (at least); returning true stops the run early. */
  until?: () => boolean;
}

/**
 * Worst-case host milliseconds a backend's own bounded waits allow for one job on a board. A job
 * deadline shorter than these would stop a hung tool before the tool's own timeout could report
 * its exit status and output, so the dispatcher never allows less.
 */
export interface JobBudget {
  /** Opening the device and flashing: every timeout on that path plus the time to kill a stuck tool. */
  flashMs: number;
  /** Releasing reset (the UART capture runs alongside it): its timeout plus the kill time. */
  resetMs: number;
}

/** Board health as a backend that keeps it reports it (today: the probe backend's quarantine). */
export interface BoardHealth {
  /** Infrastructure failures (`BackendError.isInfrastructure`) since the last success or release. */
  consecutiveFailures: number;
  /** Message of the most recent infrastructure failure, if any. */
  lastFailure: string | undefined;
  /** Set while quarantined: when (host ms) and why, in the words `availability()` reports. */
  quarantine: { sinceMs: number; reason: string } | undefined;
}

/** Outcome of a health-check firmware run (`Backend.healthCheck`). On success the board is back in service. */
export type HealthCheckOutcome =
  | { passed: true; uartText: string; elapsedNanos: number }
  | { passed: false; reason: string; uartText: string };

/**
 * The optional board-health capability of a backend (today: the probe backend, which quarantines
 * a board after consecutive infrastructure failures), as `keepsBoardHealth` narrows a `Backend` to it.
 */
export interface BoardHealthControl {
  /** Consecutive infrastructure failures, the last one, and the quarantine if any. */
  health(boardId: string): Promise<BoardHealth>;
  /** Puts the board back in service: clears the quarantine and the failure count. */
  release(boardId: string): Promise<void>;
  /**
   * Runs the board's health-check firmware; passing releases the board. Throws
   * `BackendError('unavailable', ...)` when the board has no health check configured.
   * `instance`: one instance of a pool of physical boards (`pico.2@w`, decision 0606), checked
   * with its own entry's firmware; its health is the server's, so passing releases nothing here.
   */
  healthCheck?(boardId: string, options?: { signal?: AbortSignal; instance?: string }): Promise<HealthCheckOutcome>;
}

/**
 * The one backend interface. Optional members are optional capabilities: a caller asks for them
 * by name (`backend.close?.()`, `keepsBoardHealth(backend)`), never by probing an object's shape.
 */
export interface Backend {
  readonly name: BackendName;
  /** Whether `board` can run on this backend on this host; when not, the reason says what to install or attach. */
  availability(board: Board): Promise<Availability>;
  /**
   * Opens `board` for exclusive use. The device holds its core in reset until the first `run`.
   * `instance`: the pool instance the job holds (`pico.2@w`, decision 0510); a backend with
   * `instanceCount` opens that one of its boards, the others ignore it.
   */
  open(board: Board, options?: { signal?: AbortSignal; instance?: string }): Promise<Device>;
  /**
   * Optional: how many physical boards of `board` this backend has here (the probe: its bench-file
   * entries, decision 0550); the worker reports them as the pool's instances. Emulators have none:
   * their pool size is the worker's (`--pool-size`).
   */
  instanceCount?(board: Board): number;
  /**
   * Optional: the backend's own worst-case budgets for a job on `board` (e.g. the probe's bench-file
   * tool timeouts). Without it the dispatcher's defaults apply.
   */
  jobBudgetMs?(board: Board): JobBudget;
  /**
   * Optional: stops what the backend itself keeps running between jobs (scheduled automatic health
   * checks); its devices close on their own. The server calls it when it stops.
   */
  close?(): void | Promise<void>;
  /** Optional board health, with `release` (see `BoardHealthControl`, `keepsBoardHealth`). */
  health?(boardId: string): Promise<BoardHealth>;
  /** Optional, with `health`: puts a board back in service. */
  release?(boardId: string): Promise<void>;
  /** Optional, with `health`: runs a board's (or one instance's, decision 0606) health-check firmware. */
  healthCheck?(boardId: string, options?: { signal?: AbortSignal; instance?: string }): Promise<HealthCheckOutcome>;
  /**
   * Optional pins capability: every name a scenario may use for a pin of `board` (the board
   * file's `pins` names, then the MCU's), or undefined when this backend does not model the
   * board's pins. Backends that answer it give their devices `pins`.
   */
  pinNames?(board: Board): readonly string[] | undefined;
}

/**
 * A device's GPIO pins (the optional pins capability), by any name `Backend.pinNames` lists.
 * Throws `BackendError('internal')` for a name it does not list (scenarios check names first).
 */
export interface DevicePins {
  /** The level the pin shows now and who sets it. */
  read(name: string): Promise<PinReading>;
  /** Drives the pin from outside (a button, a jumper); the level stays across reset until driven again. */
  drive(name: string, level: 0 | 1): Promise<void>;
}

/**
 * One GDB remote serial protocol byte stream to a device's core (the optional debug capability).
 * Bytes are RSP as GDB sends and receives them (framing, acks, 0x03 interrupts); text is latin1.
 */
export interface GdbStream {
  /** Sends bytes from the debugger to the target. */
  write(text: string): void;
  /** Subscribes to bytes from the target to the debugger; returns an unsubscribe function. */
  onData(listener: (text: string) => void): () => void;
  /** Resolves when the stream has ended, from either side, with why. */
  readonly closed: Promise<{ reason: string }>;
  /** Ends the stream; the target keeps the state it has (halted or running). Safe to call twice. */
  close(): Promise<void>;
}

/**
 * The optional debug capability of a device (sim, QEMU, Renode, probe): after `flash`, `attach`
 * puts the core back at reset, halted, and gives a GDB stream to it. While attached, the debugger
 * owns execution (continue, step, breakpoints) and UART output still reaches `onUart`. When the
 * stream ends, the core is where the debugger left it and `run` carries on from there (after a
 * GDB `detach`, the firmware runs on). One stream at a time.
 */
export interface DeviceDebug {
  /** Resets the flashed core, halted, and opens the GDB stream. Throws `BackendError` ('bad-image' before flash, 'unavailable', ...). */
  attach(options?: { signal?: AbortSignal }): Promise<GdbStream>;
  /**
   * Optional: serves GDB's remote protocol on a TCP port where the engine runs (the sim backend's
   * engine thread), so a debugger's packet reaches its stub and the reply its socket without
   * crossing another thread (decision 0740). The rules are the bridge's (`DebuggerGate`: framing
   * checked, one debugger at a time, each at reset, halted); the host keeps the idle timer and the
   * log (`events`). While served, `attach` is refused and the device is being debugged.
   */
  serve?(options: GdbServeOptions): Promise<ServedGdbPort>;
}

/** Where and how a device serves GDB itself (`DeviceDebug.serve`). */
export interface GdbServeOptions {
  /** TCP port on `host`; 0 picks a free one (`ServedGdbPort.port` says which). Not listened on with `relay`. */
  port: number;
  host: string;
  /**
   * Instead of listening, the device dials a bench server's legs for this debug job itself
   * (`serveDebugLegs`, clients/bench/debug-leg.ts; decision 0910), so a relayed packet wakes only
   * the engine's thread on a worker.
   */
  relay?: DebugLegAddress;
  /** Bound on one packet from the debugger, bytes. */
  maxPacketBytes: number;
  events: ServedGdbEvents;
  signal?: AbortSignal;
}

/** What a served port tells the host about its debuggers, in order: its `DebuggerSlot`'s events (core/gdb/debugger-slot.ts), and a relayed one's trouble dialling its legs. */
export type ServedGdbEvents = DebuggerEvents & { legTrouble?(message: string): void };

/** A port a device serves GDB on. */
export interface ServedGdbPort {
  readonly port: number;
  /** Resolves once the port is closed, from either side (the bench, or the engine failing), with why. */
  readonly closed: Promise<{ reason: string }>;
  /** Stops listening and closes the debugger's connection; the core stays where it is. Safe to call twice. */
  close(): Promise<void>;
}

/** True when `backend` keeps board health: it has both `health` and `release`. */
export function keepsBoardHealth(backend: Backend): backend is Backend & BoardHealthControl {
  return backend.health !== undefined && backend.release !== undefined;
}

/** `backend` as a `BoardHealthControl` when it keeps board health (`health` and `release`); undefined otherwise. */
export function boardHealthControlOf(backend: Backend): (Backend & BoardHealthControl) | undefined {
  return keepsBoardHealth(backend) ? backend : undefined;
}

export interface Device {
  readonly board: Board;
  readonly timeBase: TimeBase;
  /**
   * Optional: how the device's time advances when the backend has a choice, stated in the job's
   * `uart.clock` (QEMU: `host`, or `icount shift=N (...)` when the board file asks for -icount).
   */
  readonly clockSource?: string;
  /** UART bytes the device could not deliver (overrun, buffer limit); never silently lost. */
  readonly droppedUartBytes: number;
  /** Optional: its GPIO pins, on backends with `pinNames`. */
  readonly pins?: DevicePins;
  /** Optional debug capability: a GDB remote-protocol stream to the flashed core (see `DeviceDebug`). */
  readonly debug?: DeviceDebug;
  /** Loads `image`; the core stays in reset. Throws `BackendError` ('bad-image', 'flash-failed', ...). */
  flash(image: FirmwareImage, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Subscribes to UART output. Capture starts when the device is opened, before reset is
   * released, so the first byte the firmware sends is always delivered.
   */
  onUart(listener: (chunk: UartChunk) => void): () => void;
  /**
   * Releases reset (on the first call after `flash`/`reset`) and runs until `durationNanos`
   * of the device's time base have passed since that release, the firmware exits or crashes,
   * or `until` holds. Simulated devices pause between calls; wall-time devices keep running.
   */
  run(durationNanos: number, options?: RunOptions): Promise<RunStop>;
  /** Sends bytes to the firmware's UART receiver. */
  writeUart(bytes: Uint8Array): Promise<void>;
  /** Puts the core back in reset; the next `run` starts the firmware from the beginning. */
  reset(): Promise<void>;
  /** Stops everything the device started (processes, sockets, ports). Safe to call twice. */
  close(): Promise<void>;
}

export type BackendErrorKind = JobFailureKind;

/** The one error type backends throw. The message is shown to users in a failed job's reason. */
export class BackendError extends Error {
  override readonly name = 'BackendError';
  readonly kind: BackendErrorKind;
  /** Exit status of the external tool that failed, when there was one. */
  readonly exitCode: number | undefined;
  /** The last lines the tool printed, for the failure reason. */
  readonly outputTail: string | undefined;

  constructor(kind: BackendErrorKind, message: string, details: { exitCode?: number; outputTail?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    this.exitCode = details.exitCode;
    this.outputTail = details.outputTail;
  }

  /**
   * Whether this failure is the bench's fault rather than the firmware's or the caller's.
   * `timeout` counts: backends throw it when a tool or emulator stops answering (firmware that
   * merely runs on is a normal `elapsed` stop), and a probe that hangs every night must end up
   * quarantined like one that fails outright.
   */
  get isInfrastructure(): boolean {
    return this.kind !== 'bad-image' && this.kind !== 'cancelled';
  }
}

/** Throws a `cancelled` BackendError if `signal` is aborted. */
export function throwIfCancelled(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new BackendError('cancelled', `${what} cancelled`, { cause: signal.reason });
}

export const NANOS_PER_SECOND = 1_000_000_000;
/** Host milliseconds to nanoseconds: the wall time bases count host ms (`Clock.nowMs`) in ns. */
export const NANOS_PER_MS = 1_000_000;
