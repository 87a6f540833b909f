import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { type Board, boardFileSchema, type Mcu, mcuSchema } from './board-schema.js';

import { defaultBoardsDir } from './boards-dir.js';

export { defaultBoardsDir };

/** A board or MCU file failed to parse or validate; the message names the file and the field. */
export class BoardFileError extends Error {
  override readonly name = 'BoardFileError';
}

function readYaml<T>(file: string, schema: z.ZodType<T>): T {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new BoardFileError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new BoardFileError(`${file}: ${issues}`);
  }
  return parsed.data;
}

const yamlFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();

/** Loads every board in `dir` (default: the shipped catalog) with its MCU from `dir/mcus`. */
export function loadBoardCatalog(dir: string = defaultBoardsDir): Board[] {
  const mcus = new Map<string, Mcu>();
  for (const file of yamlFiles(path.join(dir, 'mcus'))) {
    const mcu = readYaml(path.join(dir, 'mcus', file), mcuSchema);
    if (`${mcu.id}.yaml` !== file) throw new BoardFileError(`${file}: MCU id "${mcu.id}" must equal the file name`);
    mcus.set(mcu.id, mcu);
  }
  return yamlFiles(dir).map((file) => {
    const board = readYaml(path.join(dir, file), boardFileSchema);
    if (`${board.id}.yaml` !== file) throw new BoardFileError(`${file}: board id "${board.id}" must equal the file name`);
    const mcu = mcus.get(board.mcu);
    if (!mcu) {
      throw new BoardFileError(`${file}: unknown MCU "${board.mcu}" (known: ${[...mcus.keys()].join(', ')})`);
    }
    return { ...board, mcu };
  });
}
