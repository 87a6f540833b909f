import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BackendError } from '../backend.js';
import { jobFailureKinds } from '../../wire/job-failure-kinds.js';

/**
 * Keeps the probe docs in step with `BackendError.isInfrastructure`, the rule quarantine counts
 * by: the kinds docs/bench-file.md lists as counting are exactly the infrastructure kinds, and no
 * probe doc says one of them does not count.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const infrastructure = jobFailureKinds.filter((kind) => new BackendError(kind, '').isInfrastructure);
const other = jobFailureKinds.filter((kind) => !new BackendError(kind, '').isInfrastructure);

describe('probe docs and the quarantine rule', () => {
  it('docs/bench-file.md lists exactly the infrastructure kinds as counting against a board', () => {
    const text = read('docs/bench-file.md').replace(/\s+/g, ' ');
    const listed = /Every `BackendError` whose `isInfrastructure` is true \(([^)]*)\) counts against the board/.exec(text);
    expect(listed, 'the sentence listing the counted kinds').not.toBeNull();
    const kinds = [...listed![1]!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
    expect([...kinds].sort()).toEqual([...infrastructure].sort());
    for (const kind of other) expect(text).toContain(kind === 'bad-image' ? '(`bad-image`)' : kind);
  });

  it.each(['docs/bench-file.md', 'docs/backends/probe.md', 'ci/README.md'])('%s never says an infrastructure kind does not count', (file) => {
    const text = read(file).replace(/\s+/g, ' ');
    for (const kind of infrastructure) {
      expect(text).not.toMatch(new RegExp(`\`${kind}\`[^.]{0,40}(do|does) not count`));
      expect(text).not.toMatch(new RegExp(`and \`${kind}\` do not count`));
    }
  });
});
