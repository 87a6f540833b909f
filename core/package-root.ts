import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of hilbench's own package.json, found upwards from this file: the repository in the
 * sources, the installed package when compiled (dist/ sits inside it). Data files shipped beside
 * the code (the board catalog, package.json) are read from there.
 */
export function packageRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'hilbench') return dir;
    if (path.dirname(dir) === dir) throw new Error('hilbench: cannot find its own package.json above its code');
  }
}
