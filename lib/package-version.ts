import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../core/package-root.js';

/** The package's version, from its package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
