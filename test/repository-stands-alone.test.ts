import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A fresh clone has nothing beside it, so nothing in the repository may depend on files outside
 * it: no test reads them, no doc links or names them (issue 9: `npm test` failed in a clone
 * without the specs' sibling folder, and the README's spec links were dead). The interfaces the project
 * implements are stated in docs/interface/.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const thisFile = path.relative(root, fileURLToPath(import.meta.url));

/**
 * Paths that exist only on some machine: the sibling folder the specs once lived in, the
 * development machine's checkout and CI folders, and home directories. System paths that are
 * conventions of the tools (`/tmp/...`, `/etc/hilbench/bench.yaml`, `/usr/bin/env`, `/dev/tty...`)
 * are not dependencies and stay allowed.
 */
/**
 * The specs' sibling folder and the development machine's top folder, each spelled in parts so
 * that this file does not itself name a path outside the repository.
 */
const SIBLING = 'sha' + 'red';
const DEV_TOP = 'wo' + 'rk';
const OUTSIDE_PATHS: ReadonlyArray<[RegExp, string]> = [
  [new RegExp(`\\.\\./${SIBLING}\\b`), `the sibling folder ../${SIBLING}`],
  [new RegExp(`\\b${SIBLING}/(spec|design)/`), 'the spec or design folder beside the repository'],
  [new RegExp(`(^|[^\\w.-])\\/${DEV_TOP}\\/`), `a path under /${DEV_TOP}/ (the development machine)`],
  [/(^|[^\w.-])\/(home|Users|root)\/\w/, 'a home directory'],
];

/** Tracked and new (not ignored) files; without git (a copied tree), every file but dependencies and data. */
function repositoryFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\0').filter((f) => f !== '');
  } catch {
    const walk = (dir: string): string[] =>
      readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) return ['node_modules', '.git', 'data', 'coverage', '.tmp'].includes(e.name) ? [] : walk(rel);
        return [rel];
      });
    return walk('');
  }
}

/** Text of each file (binary files and files deleted in the working tree are left out). */
const texts: ReadonlyArray<{ file: string; text: string }> = repositoryFiles().flatMap((file) => {
  const full = path.join(root, file);
  if (!existsSync(full) || !statSync(full).isFile()) return [];
  const bytes = readFileSync(full);
  return bytes.includes(0) ? [] : [{ file, text: bytes.toString('utf8') }];
});

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;
const inside = (target: string) => target === root || target.startsWith(root + path.sep);

describe('the repository stands alone', () => {
  it('sees the files (the scan is not vacuous)', () => {
    expect(texts.map((t) => t.file)).toEqual(expect.arrayContaining(['README.md', 'package.json', 'docs/interface/bench-service.md', thisFile]));
  });

  it('no file names a path outside the repository', () => {
    const found = texts
      .filter((t) => t.file !== thisFile)
      .flatMap(({ file, text }) =>
        OUTSIDE_PATHS.flatMap(([pattern, what]) => {
          const m = new RegExp(pattern.source, 'g');
          return [...text.matchAll(m)].map((hit) => `${file}:${lineOf(text, hit.index)}: ${what} (${JSON.stringify(hit[0].trim())})`);
        }),
      );
    expect(found, 'name the project\'s own doc (docs/interface/...) or say it in words').toEqual([]);
  });

  it('no relative path climbs out of the repository', () => {
    const found = texts
      .filter((t) => t.file !== thisFile)
      .flatMap(({ file, text }) =>
        [...text.matchAll(/(?:\.\.\/)+[\w@-][\w.@-]*/g)]
          .filter((hit) => !inside(path.resolve(root, path.dirname(file), hit[0])))
          .map((hit) => `${file}:${lineOf(text, hit.index)}: ${hit[0]}`),
      );
    expect(found).toEqual([]);
  });

  it('every relative Markdown link points at a file (and heading) inside the repository', () => {
    const headingsOf = new Map<string, Set<string>>();
    const anchors = (file: string) => {
      let known = headingsOf.get(file);
      if (!known) {
        // GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens, repeats numbered.
        known = new Set();
        const seen = new Map<string, number>();
        for (const [, heading] of withoutCode(readFileSync(file, 'utf8')).matchAll(/^#{1,6} (.*)$/gm)) {
          const slug = heading!.trim().toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
          const n = seen.get(slug) ?? 0;
          seen.set(slug, n + 1);
          known.add(n === 0 ? slug : `${slug}-${n}`);
        }
        headingsOf.set(file, known);
      }
      return known;
    };
    const broken = texts
      .filter((t) => t.file.endsWith('.md'))
      .flatMap(({ file, text }) =>
        [...withoutCode(text).matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].flatMap(([, link]) => {
          if (/^[a-z][a-z0-9+.-]*:/i.test(link!)) return [];
          const [target, anchor] = link!.split('#') as [string, string | undefined];
          const full = target === '' ? path.join(root, file) : path.resolve(root, path.dirname(file), decodeURIComponent(target));
          if (!inside(full)) return [`${file}: ${link} leaves the repository`];
          if (!existsSync(full)) return [`${file}: ${link} does not exist`];
          if (anchor && full.endsWith('.md') && !anchors(full).has(anchor)) return [`${file}: ${link} names no heading of ${path.relative(root, full)}`];
          return [];
        }),
      );
    expect(broken).toEqual([]);
  });
});

/** Markdown without fenced code blocks (their brackets are not links, their `#` lines not headings). */
function withoutCode(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}
