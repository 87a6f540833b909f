// @ts-check
import { existsSync, openSync, readFileSync } from 'node:fs';
import tty from 'node:tty';

/**
 * The "firmware" of a fake board, started by the fake tools when reset is released (see
 * fake-board.ts, which works out the boot text from the flashed ELF). Plain JavaScript so it
 * starts in tens of milliseconds, like a real board leaving reset. It writes the boot text to
 * the board end of the pty, then `hilbench-fake-board: tick <k>` every 100 ms, and echoes what
 * it receives. It stops when its pid file no longer names it (halted or re-flashed), when the
 * pty goes away, or after 120 s.
 *
 *   node fake-firmware.mjs <pty path> <pid file> <boot text, base64> <tick ms>
 */
const [uartPath, pidPath, bootBase64, tickMsText] = process.argv.slice(2);
if (!uartPath || !pidPath || bootBase64 === undefined || !tickMsText) {
  throw new Error('usage: fake-firmware.mjs <pty path> <pid file> <boot text, base64> <tick ms>');
}
const MAX_LIFETIME_MS = 120_000;

const fd = openSync(uartPath, 'r+');
const out = new tty.WriteStream(fd);
const input = new tty.ReadStream(fd);
// Ending every handle ends the process (no process.exit outside bin/).
const stop = () => {
  clearInterval(timer);
  input.destroy();
  out.destroy();
};
out.on('error', stop);
input.on('error', stop);
input.on('data', (chunk) => out.write(chunk));

out.write(Buffer.from(bootBase64, 'base64'));
let tick = 0;
const startedMs = Date.now();
const timer = setInterval(() => {
  const stillMe = existsSync(pidPath) && readFileSync(pidPath, 'utf8') === String(process.pid);
  if (!stillMe || Date.now() - startedMs > MAX_LIFETIME_MS) return stop();
  tick += 1;
  out.write(`hilbench-fake-board: tick ${tick}\r\n`);
}, Number(tickMsText));
