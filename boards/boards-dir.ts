import path from 'node:path';
import { packageRoot } from '../core/package-root.js';

/** The folder that holds the shipped board files: `boards/` at the package root, in the sources and in the compiled package alike. */
export const defaultBoardsDir = path.join(packageRoot(), 'boards');
