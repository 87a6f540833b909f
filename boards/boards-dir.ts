import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The folder that holds the shipped board files: this one in the sources; in the compiled
 * package (`dist/boards/`), the package's own `boards/`, where the YAML files are shipped.
 */
export const defaultBoardsDir = existsSync(path.join(here, 'mcus')) ? here : path.resolve(here, '../../boards');
