import { createRequire } from 'node:module';
import path from 'node:path';

/** The example firmware the hilbench package ships (firmware/examples/<board>/<program>.elf). */
export function exampleFirmware(board: string, program = 'hello'): string {
  const packageJson = createRequire(import.meta.url).resolve('hilbench/package.json');
  return path.join(path.dirname(packageJson), 'firmware', 'examples', board, `${program}.elf`);
}
