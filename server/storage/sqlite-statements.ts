import type Database from 'better-sqlite3';
import type { Statement } from './sql-steps.js';

/**
 * Runs statements of steps (`sql-steps.ts`) on a better-sqlite3 handle, synchronously. Statements
 * are prepared once per text and kept: preparing is most of the cost of a short statement.
 */
export function sqliteStatements(db: Database.Database): { execute: (statement: Statement) => unknown; forget: () => void } {
  const prepared = new Map<string, Database.Statement>();
  return {
    execute: (statement) => {
      if (statement.kind === 'script') {
        db.exec(statement.sql);
        return 0;
      }
      let ready = prepared.get(statement.sql);
      if (ready === undefined) {
        ready = db.prepare(statement.sql);
        prepared.set(statement.sql, ready);
      }
      if (statement.kind === 'run') return ready.run(...statement.params).changes;
      if (statement.kind === 'one') return ready.get(...statement.params);
      return ready.all(...statement.params);
    },
    forget: () => prepared.clear(),
  };
}
