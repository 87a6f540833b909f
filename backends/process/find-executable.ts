import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Resolves `command` the way a shell would: a path containing a slash is checked as is, a bare
 * name is looked up in `searchPath` (default: $PATH). Returns the absolute path of an executable
 * regular file, or undefined.
 */
export function findExecutable(command: string, searchPath: string = process.env.PATH ?? ''): string | undefined {
  const candidates = command.includes('/') ? [path.resolve(command)] : searchPath.split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, command));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not there or not executable: try the next directory.
    }
  }
  return undefined;
}
