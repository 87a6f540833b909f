import { readFileSync } from 'node:fs';
import net from 'node:net';
import { execa } from 'execa';
import { ConsoleLogger, GDBConnection, GDBServer, LogLevel, Simulator } from 'rp2040js';
import { qemuDirectCommand } from '../backends/qemu/qemu-command.js';
import { freeTcpPort } from '../backends/renode/free-tcp-port.js';
import type { Board } from '../boards/board-schema.js';
import { loadableSegments, parseElf } from '../core/elf.js';
import { AvrEngine } from '../sim/avr-engine.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';

/**
 * The baselines of the debug benchmark: each engine's own GDB server as its users run it, with
 * nothing of hilbench in between (no bridge, no framing checks, no engine thread, no device).
 * Each serves 127.0.0.1 on a free port; `close` ends it.
 */
export interface OwnGdbServer {
  port: number;
  close(): Promise<void>;
}

const FLASH_START = 0x1000_0000;

/**
 * A plain TCP server handing each connection's bytes to the receiver `open(send)` returns, in this
 * thread; when the connection closes, its `close` stops what it started (a simulator left running
 * after GDB's `continue` and `kill` would take this thread's time from every later measurement).
 */
async function inThreadServer(open: (send: (text: string) => void) => { receive: (text: string) => void; close: () => void }): Promise<OwnGdbServer> {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    const session = open((text) => {
      if (!socket.destroyed) socket.write(Buffer.from(text, 'latin1'));
    });
    socket.on('data', (data: Buffer) => session.receive(data.toString('latin1')));
    socket.once('close', () => session.close());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * rp2040js's own `GDBServer` on its own `Simulator`, as rp2040js's `GDBTCPServer` serves it
 * (that class listens on every interface at a fixed port, so its ten lines are repeated here on
 * loopback): a fresh chip per connection with the image in flash and the core at its reset
 * vector, as `hilbench debug` resets it for each debugger.
 */
export function rp2040jsOwnServer(elfPath: string, rom: OwnBootrom): Promise<OwnGdbServer> {
  const bytes = new Uint8Array(readFileSync(elfPath));
  const segments = loadableSegments(parseElf(bytes));
  return inThreadServer((send) => {
    const sim = new Simulator();
    const chip = sim.rp2040;
    chip.logger = new ConsoleLogger(LogLevel.Error);
    chip.loadBootrom(rom.words);
    for (const s of segments) chip.flash.set(bytes.subarray(s.offset, s.offset + s.fileSizeBytes), s.paddr - FLASH_START);
    const vectors = segments[0]!.paddr;
    chip.core.VTOR = vectors;
    chip.core.SP = chip.readUint32(vectors);
    chip.core.PC = chip.readUint32(vectors + 4) & ~1;
    const server = new GDBServer(sim);
    server.logger = new ConsoleLogger(LogLevel.Error);
    const connection = new GDBConnection(server, send);
    // As rp2040js's GDBTCPServer does on a socket's close, and the chip stops: nobody debugs it now.
    const close = () => {
      server.removeConnection(connection);
      sim.stop();
    };
    return { receive: (text) => connection.feedData(text), close };
  });
}

/** hilbench's avr8js stub in this thread (no engine thread, no bridge): a fresh engine per connection. */
export function avrStubInThread(board: Board, elfPath: string): Promise<OwnGdbServer> {
  const bytes = new Uint8Array(readFileSync(elfPath));
  const elf = parseElf(bytes);
  return inThreadServer((send) => {
    const target = new AvrEngine(board, { bytes, elf }, { onUnmodelled: () => undefined }).openGdb({ send, onUart: () => undefined, onEnd: () => undefined });
    return { receive: (text) => target.receive(text), close: () => target.close() };
  });
}

/**
 * QEMU's gdbstub as its users start it: the backend's own machine and kernel (`qemuDirectCommand`)
 * with `-S -gdb tcp:127.0.0.1:PORT`. One process serves one debugger: a GDB `kill` ends it.
 */
export async function qemuOwnGdbstub(board: Board, elfPath: string): Promise<OwnGdbServer> {
  const port = await freeTcpPort();
  const command = qemuDirectCommand(board, elfPath);
  const qemu = execa(command.file, ['-S', '-gdb', `tcp:127.0.0.1:${port}`, ...command.args], { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', reject: false });
  // Ready when it accepts a connection; that probe connection is closed at once (QEMU serves the next).
  for (let attempt = 0; ; attempt++) {
    const connected = await new Promise<boolean>((resolve) => {
      const probe = net.createConnection({ port, host: '127.0.0.1' }, () => {
        probe.destroy();
        resolve(true);
      });
      probe.on('error', () => resolve(false));
    });
    if (connected) break;
    if (attempt > 500 || qemu.exitCode !== null) throw new Error(`qemu-system-arm did not serve GDB on ${port}: ${String((await qemu).stderr)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    port,
    close: async () => {
      qemu.kill('SIGTERM');
      await qemu;
    },
  };
}
