import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's version: package.json is beside lib/ in the sources and beside dist/ in the package. */
export function packageVersion(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const file = [path.resolve(here, '../package.json'), path.resolve(here, '../../package.json')].find((f) => existsSync(f));
  if (!file) return 'unknown';
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
