import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Arduino-core sketches for the uno simulator (firmware/examples/avr/*.ino): built by
 * build.sh (target uno-arduino) from Debian's arduino-core-avr, never committed, cached under the
 * gitignored .tmp/arduino/ by a key of every input, so tests build them once per change.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const firmwareDir = path.dirname(here);
const repoDir = path.resolve(firmwareDir, '../..');

/** Where Debian's arduino-core-avr puts the AVR core (the Arduino IDE's hardware folder layout). */
export const ARDUINO_AVR_DIR = '/usr/share/arduino/hardware/arduino/avr';
export const ARDUINO_INSTALL_HINT = 'apt-get install -y arduino-core-avr';
/** The bauds build.sh builds every sketch at (ARDUINO_BAUDS there). */
export const arduinoSketchBauds = [9600, 115200] as const;
export type ArduinoSketchBaud = (typeof arduinoSketchBauds)[number];

/** Whether the Arduino core is installed where build.sh looks for it. */
export function arduinoCoreInstalled(coreDir = ARDUINO_AVR_DIR): boolean {
  return existsSync(path.join(coreDir, 'cores/arduino/Arduino.h'));
}

/** A key of everything the images are made from: build.sh, the sketches, the core's version, avr-gcc's. */
function buildKey(coreDir: string): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(path.join(firmwareDir, 'build.sh')));
  hash.update(readFileSync(path.join(here, 'arduino-serial.ino')));
  hash.update(readFileSync(path.join(coreDir, 'platform.txt')));
  hash.update(execFileSync('avr-gcc', ['--version']));
  return hash.digest('hex').slice(0, 16);
}

/**
 * Builds the sketches if the cache has no build of the current inputs, and returns the folder
 * holding `<sketch>-<baud>.elf`. Concurrent callers (test files in parallel workers) each build
 * into a folder of their own and the first rename wins. Throws with the install command when the
 * core is missing, and with the compiler's output when the build fails.
 */
export function buildArduinoSketches(options: { coreDir?: string; cacheDir?: string } = {}): string {
  const coreDir = options.coreDir ?? ARDUINO_AVR_DIR;
  if (!arduinoCoreInstalled(coreDir)) throw new Error(`the Arduino core is not installed in ${coreDir} (${ARDUINO_INSTALL_HINT})`);
  const cacheDir = options.cacheDir ?? path.join(repoDir, '.tmp/arduino');
  const done = path.join(cacheDir, `build-${buildKey(coreDir)}`);
  if (existsSync(path.join(done, 'uno'))) return path.join(done, 'uno');
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(path.join(cacheDir, 'work-'));
  try {
    execFileSync('bash', [path.join(firmwareDir, 'build.sh'), '--arduino-out', work, 'uno-arduino'], {
      env: { ...process.env, ARDUINO_AVR: coreDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`build.sh uno-arduino failed: ${stderr.trim().split('\n').slice(-20).join('\n') || (err as Error).message}`, { cause: err });
  }
  try {
    renameSync(work, done);
  } catch (err) {
    // Another process finished the same build first: use its images.
    rmSync(work, { recursive: true, force: true });
    if (!existsSync(path.join(done, 'uno'))) throw err;
  }
  return path.join(done, 'uno');
}

/** The path of one sketch image in a folder returned by `buildArduinoSketches`. */
export const arduinoSketchElf = (dir: string, sketch: string, baud: ArduinoSketchBaud) => path.join(dir, `${sketch}-${baud}.elf`);
