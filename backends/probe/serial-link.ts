import { existsSync, readdirSync } from 'node:fs';
import { SerialPort, type SerialPortMock } from 'serialport';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { BackendError } from '../backend.js';

/**
 * The board's UART through `serialport`. Opened by path only: `SerialPort.list()` spawns
 * `udevadm` and, where it is missing, the unhandled spawn error kills the process
 * (backends.md, "serialport 13"), so hilbench never lists ports. Missing devices are explained
 * from `/dev/serial/by-id` instead.
 */

/** A serialport binding: the platform's (default) or `SerialPortMock.binding` in unit tests. */
export type SerialBinding = (typeof SerialPort)['binding'] | (typeof SerialPortMock)['binding'];

export interface SerialLinkOptions {
  path: string;
  baudRate: number;
  binding?: SerialBinding;
  clock: Clock;
  openTimeoutMs: number;
  signal?: AbortSignal;
}

/**
 * How often an open link checks that its device node still exists. serialport reports most
 * disconnects as a `close` event, but not all: a pty whose other end dies between two reads stays
 * "open" for ever (seen with socat here), and a USB adapter can behave alike. The node's
 * disappearance (udev removes /dev/serial/by-id links on unplug) is the second witness.
 */
export const SERIAL_PRESENCE_CHECK_MS = 500;

const BY_ID_DIR = '/dev/serial/by-id';

/** What is plugged in, for "device missing" messages. */
function presentDevices(): string {
  try {
    const names = readdirSync(BY_ID_DIR);
    return names.length > 0 ? `present in ${BY_ID_DIR}: ${names.join(', ')}` : `${BY_ID_DIR} is empty`;
  } catch {
    return `${BY_ID_DIR} does not exist (no USB serial devices attached)`;
  }
}

export class SerialLink {
  private readonly dataListeners = new Set<(bytes: Uint8Array) => void>();
  private readonly lostListeners = new Set<(error: BackendError) => void>();
  private closing = false;
  private presenceTimer: TimerHandle | undefined;
  /** Set once the device vanished; every later use fails with it. */
  lost: BackendError | undefined;

  private constructor(
    private readonly port: SerialPort,
    readonly path: string,
    private readonly clock: Clock,
  ) {
    // Only a node that exists can vanish: mock bindings open paths that never existed.
    if (existsSync(path)) this.checkPresence();
    port.on('data', (chunk: Buffer) => {
      const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (const listener of this.dataListeners) listener(bytes);
    });
    port.on('close', (err: (Error & { disconnected?: boolean }) | null) => {
      if (this.closing) return;
      this.markLost(`serial device ${path} vanished${err?.message ? ` (${err.message})` : ''}; ${presentDevices()}`);
    });
    port.on('error', (err: Error) => {
      if (!this.closing) this.markLost(`serial device ${path} failed: ${err.message}`);
    });
  }

  /** Opens `path`, bounded by `openTimeoutMs`. Throws `serial-lost` when it is missing or will not open. */
  static async open(options: SerialLinkOptions): Promise<SerialLink> {
    const { clock } = options;
    // serialport 13's SerialPort spreads its options over its detected binding, so a `binding`
    // given here wins; passing it through a variable keeps the declared option type.
    const portOptions = { path: options.path, baudRate: options.baudRate, autoOpen: false, ...(options.binding ? { binding: options.binding } : {}) };
    const port = new SerialPort(portOptions);
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const settle = (error?: BackendError) => {
        if (done) return;
        done = true;
        clock.clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) {
          if (port.isOpen) port.close();
          reject(error);
        } else resolve();
      };
      const onAbort = () => settle(new BackendError('cancelled', `opening serial device ${options.path} cancelled`));
      const timer = clock.setTimeout(
        () => settle(new BackendError('serial-lost', `serial device ${options.path} did not open within ${options.openTimeoutMs} ms`)),
        options.openTimeoutMs,
      );
      options.signal?.addEventListener('abort', onAbort, { once: true });
      port.open((err) => {
        settle(
          err
            ? new BackendError('serial-lost', `cannot open serial device ${options.path}: ${err.message}; ${presentDevices()}`, { cause: err })
            : undefined,
        );
      });
    });
    return new SerialLink(port, options.path, clock);
  }

  onData(listener: (bytes: Uint8Array) => void): void {
    this.dataListeners.add(listener);
  }

  onLost(listener: (error: BackendError) => void): void {
    this.lostListeners.add(listener);
  }

  /** Discards what the OS has received but not yet delivered (output of the previous firmware). */
  flushInput(): Promise<void> {
    return this.call('flush input', (cb) => this.port.flush(cb));
  }

  /** Writes `bytes` and waits until the OS has sent them. */
  async write(bytes: Uint8Array): Promise<void> {
    await this.call('write', (cb) => this.port.write(Buffer.from(bytes), (err) => cb(err ?? null)));
    await this.call('drain', (cb) => this.port.drain(cb));
  }

  /** Closes the port; safe to call twice. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.presenceTimer) this.clock.clearTimeout(this.presenceTimer);
    this.dataListeners.clear();
    this.lostListeners.clear();
    if (!this.port.isOpen) return;
    await new Promise<void>((resolve) => this.port.close(() => resolve()));
  }

  private call(what: string, fn: (cb: (err: Error | null) => void) => void): Promise<void> {
    if (this.lost) return Promise.reject(this.lost);
    return new Promise((resolve, reject) =>
      fn((err) => {
        if (!err) return resolve();
        this.markLost(`serial ${what} on ${this.path} failed: ${err.message}`);
        reject(this.lost);
      }),
    );
  }

  private checkPresence() {
    this.presenceTimer = this.clock.setTimeout(() => {
      if (this.closing || this.lost) return;
      if (!existsSync(this.path)) {
        this.markLost(`serial device ${this.path} vanished (its device node is gone); ${presentDevices()}`);
        if (this.port.isOpen) this.port.close();
        return;
      }
      this.checkPresence();
    }, SERIAL_PRESENCE_CHECK_MS);
  }

  private markLost(message: string) {
    if (this.lost) return;
    this.lost = new BackendError('serial-lost', message);
    for (const listener of this.lostListeners) listener(this.lost);
  }
}
