import { createHash } from 'node:crypto';
import { existsSync, openSync, readFileSync } from 'node:fs';
import tty from 'node:tty';
import { parseElf, sectionBytes } from '../../../core/elf.js';
import { FAKE_TICK_MS, fakeBootLine } from './fake-board.js';

/**
 * The "firmware" of a fake board: started by the fake tools when reset is released. It writes
 * its boot line (or the ELF's `.hilbench.uart` section) to the board end of the pty, then
 * `hilbench-fake-board: tick <k>` every 100 ms, and echoes what it receives. It stops when its
 * pid file no longer names it (halted or re-flashed), when the pty goes away, or after 120 s.
 *
 *   node --import tsx fake-firmware.ts <image.elf> <pty path> <pid file>
 */
const [imagePath, uartPath, pidPath] = process.argv.slice(2);
if (!imagePath || !uartPath || !pidPath) throw new Error('usage: fake-firmware.ts <image.elf> <pty path> <pid file>');

const MAX_LIFETIME_MS = 120_000;
const bytes = new Uint8Array(readFileSync(imagePath));
const custom = sectionBytes(bytes, parseElf(bytes), '.hilbench.uart');
const boot = custom ? Buffer.from(custom) : Buffer.from(fakeBootLine(createHash('sha256').update(bytes).digest('hex')));

const fd = openSync(uartPath, 'r+');
const out = new tty.WriteStream(fd);
const input = new tty.ReadStream(fd);
const stop = () => process.exit(0);
out.on('error', stop);
input.on('error', stop);
input.on('data', (chunk: Buffer) => out.write(chunk));

out.write(boot);
let tick = 0;
const startedMs = Date.now();
setInterval(() => {
  const stillMe = existsSync(pidPath) && readFileSync(pidPath, 'utf8') === String(process.pid);
  if (!stillMe || Date.now() - startedMs > MAX_LIFETIME_MS) stop();
  tick += 1;
  out.write(`hilbench-fake-board: tick ${tick}\r\n`);
}, FAKE_TICK_MS);
