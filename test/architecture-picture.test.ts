import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** `n` steps up, spelled so the repository check (no relative path climbs out of it) does not read a pretend file's imports as this file's. */
const up = (n: number) => '../'.repeat(n);

/**
 * docs/architecture.md draws the layers, server/bench's tiers and server/relay's chains;
 * eslint.config.js enforces them. A picture that drifts
 * from the rule misleads every newcomer, so the two are compared here, and every top-level folder
 * of TypeScript that ships is one of the layers.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** The `layers` array of eslint.config.js, in order. */
function lintLayers(): string[] {
  const match = /const layers = \[([^\]]*)\];/.exec(read('eslint.config.js'));
  if (!match) throw new Error('eslint.config.js has no `const layers = [...]`');
  return [...(match[1] as string).matchAll(/'([a-z]+)'/g)].map((m) => m[1] as string);
}

describe('the picture of the layers', () => {
  it.each(['docs/architecture.md', 'README.md', 'test/README.md'])('%s draws the layers in the order the lint rule enforces', (file) => {
    const line = read(file)
      .split('\n')
      .find((l) => /^core\s+<-/.test(l));
    expect(line, `${file} has no "core <- ..." line`).toBeDefined();
    expect((line as string).split('<-').map((part) => part.trim())).toEqual(lintLayers());
  });

  it('the upward picture lists the same layers, top to bottom', () => {
    const doc = read('docs/architecture.md');
    const block = doc.slice(doc.indexOf('Read upwards'));
    const fence = block.slice(block.indexOf('```') + 3, block.indexOf('```', block.indexOf('```') + 3));
    const names = fence
      .split('\n')
      .map((l) => /^\s+([a-z]+)\s/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined);
    expect(names).toEqual([...lintLayers()].reverse());
  });

  it('the build compiles exactly the layers', () => {
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    expect(build.include).toEqual(lintLayers());
  });

  it('the architecture table names every layer', () => {
    const doc = read('docs/architecture.md');
    for (const layer of lintLayers()) expect(doc, layer).toContain(`| \`${layer}/\` |`);
    // A new top-level folder of TypeScript must be placed in the layers (or be one of the folders
    // of tests, tools and examples that nothing imports).
    const notLayers = new Set(['test', 'perf', 'ci', 'scenarios', 'firmware', 'examples', 'node_modules', 'dist', 'data']);
    const holdsTypeScript = (dir: string): boolean =>
      readdirSync(dir, { withFileTypes: true }).some((d) => (d.isDirectory() ? holdsTypeScript(path.join(dir, d.name)) : d.name.endsWith('.ts')));
    const folders = readdirSync(root, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.') && !notLayers.has(d.name) && holdsTypeScript(path.join(root, d.name)))
      .map((d) => d.name);
    expect(folders.sort()).toEqual([...lintLayers()].sort());
  });
});

/** The `benchTiers` array of eslint.config.js: server/bench's folders, lowest tier first. */
function lintBenchTiers(): string[][] {
  const match = /const benchTiers = (\[.*\]);/.exec(read('eslint.config.js'));
  if (!match) throw new Error('eslint.config.js has no `const benchTiers = [[...], ...]`');
  return JSON.parse((match[1] as string).replaceAll("'", '"')) as string[][];
}

/** What server/bench/domain may not import: the tiers above it, HTTP, and the answers' schemas. */
const benchDomainForbidden = [
  /^\.\.\/(?:views|routes|pages)\//,
  /^(?:express|ws|node:https?|https?)(?:\/|$)/,
  /^\.\.\/\.\.\/http\/(?!logger\.js$)/,
  /wire\/bench\/job-answer-schemas\.js$/,
];

/** One import of a file: what it names (empty for a bare or dynamic import) and the module it names. */
interface ModuleImport {
  file: string;
  names: string;
  specifier: string;
}

/**
 * Every import in `text`: `import … from`, `export … from`, `import('…')` and a bare `import '…'`.
 * Read from the files themselves, not from the lint rule: a rule whose pattern stops matching
 * would pass everything, so the rule and these checks keep each other honest.
 */
function importsIn(file: string, text: string): ModuleImport[] {
  const pattern = /\b(?:import|export)\s+([^'";]*?)\s*\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm;
  return [...text.matchAll(pattern)].map((m) => ({ file, names: m[1] ?? '', specifier: (m[2] ?? m[3] ?? m[4]) as string }));
}

/** Production TypeScript files under `folder` (repo-relative), each with its imports. */
function moduleImports(folder: string): ModuleImport[] {
  return readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts'))
    .flatMap((d) => {
      const file = path.relative(root, path.join(d.parentPath, d.name)).split(path.sep).join('/');
      return importsIn(file, read(file));
    });
}

/** The imports of server/bench/domain that its tier forbids, as "file: module" lines. */
function benchDomainOffences(imports: ModuleImport[]): string[] {
  return imports.flatMap(({ file, names, specifier }) => {
    const answers = /(?:Body|Schema)\b/.test(names) && /wire\/bench\/bench-schemas\.js$/.test(specifier);
    return benchDomainForbidden.some((re) => re.test(specifier)) || answers ? [`${file}: ${specifier}${answers ? ` (${names.trim()})` : ''}`] : [];
  });
}

describe('the picture of server/bench', () => {
  const line = read('docs/architecture.md')
    .split('\n')
    .find((l) => l.startsWith('server/bench:'));
  const tiers = (line ?? '')
    .slice('server/bench:'.length)
    .split('<-')
    .map((tier) => tier.split(/[|,]/).map((part) => part.trim()));
  const folderTiers = tiers.slice(0, -1);
  const compositionRoot = tiers.at(-1) ?? [];

  it('docs/architecture.md draws the tiers the lint rule enforces', () => {
    expect(line, 'docs/architecture.md has no "server/bench: ... <- ..." line').toBeDefined();
    expect(folderTiers).toEqual(lintBenchTiers());
  });

  it('server/bench holds exactly those folders, and only the composition root beside them', () => {
    const entries = readdirSync(path.join(root, 'server/bench'), { withFileTypes: true });
    expect(entries.filter((d) => d.isDirectory()).map((d) => d.name).sort()).toEqual(folderTiers.flat().sort());
    expect(entries.filter((d) => d.isFile()).map((d) => d.name).sort(), 'place a new file in one of the folders').toEqual([...compositionRoot].sort());
  });

  it('domain/ returns domain values: it imports no views, routes, pages, HTTP or wire answer schemas', () => {
    const imports = moduleImports('server/bench/domain');
    // About 200 today: far fewer means the scanner stopped seeing imports, and passes everything.
    expect(imports.length).toBeGreaterThan(150);
    expect(benchDomainOffences(imports), 'the domain returns records and domain values; views/ shape the answers (decision 0880)').toEqual([]);
  });

  it('the check sees every form of a forbidden import', () => {
    const text = [
      `import { isoFromMs } from '${up(3)}core/clock.js';`,
      `import type { Logger } from '${up(2)}http/logger.js';`,
      "export { adminBody } from '../views/board-views.js';",
      "const routes = await import('../routes/bench-routes.js');",
      "import 'express/lib/router/index.js';",
      "import https from 'https';",
      `import type {\n  JobBody,\n} from "${up(3)}wire/bench/bench-schemas.js";`,
      `import { respond } from '${up(2)}http/respond.js';`,
    ].join('\n');
    expect(benchDomainOffences(importsIn('server/bench/domain/x.ts', text))).toEqual([
      'server/bench/domain/x.ts: ../views/board-views.js',
      'server/bench/domain/x.ts: ../routes/bench-routes.js',
      'server/bench/domain/x.ts: express/lib/router/index.js',
      'server/bench/domain/x.ts: https',
      `server/bench/domain/x.ts: ${up(3)}wire/bench/bench-schemas.js (type {\n  JobBody,\n})`,
      `server/bench/domain/x.ts: ${up(2)}http/respond.js`,
    ]);
  });

  it('the table names every folder', () => {
    const doc = read('docs/architecture.md');
    for (const folder of folderTiers.flat()) expect(doc, folder).toContain(`| \`server/bench/${folder}/\` |`);
  });
});

/** The `relayChains` of eslint.config.js: each a list of tiers of server/relay's parts, lowest first. */
function lintRelayChains(): string[][][] {
  const match = /const relayChains = (\[[\s\S]*?\]);\n/.exec(read('eslint.config.js'));
  if (!match) throw new Error('eslint.config.js has no `const relayChains = [[[...], ...], ...];`');
  return JSON.parse((match[1] as string).replaceAll("'", '"').replace(/,\s*\]/g, ']')) as string[][][];
}

/** The part of the relay a repo-relative file belongs to, or undefined for a file outside it. */
function relayPartOf(file: string, parts: ReadonlySet<string>): string | undefined {
  if (file.startsWith('server/storage/relay/')) return 'server/storage/relay';
  if (!file.startsWith('server/relay/')) return undefined;
  const rest = file.slice('server/relay/'.length);
  const part = rest.includes('/') ? (rest.split('/')[0] as string) : rest;
  return parts.has(part) ? part : `unplaced: ${part}`;
}

/** Every part a part may import: its tier and the tiers to its left, in each chain that holds it. */
function relayAllowed(chains: string[][][], part: string): Set<string> {
  return new Set(chains.flatMap((chain) => {
    const at = chain.findIndex((tier) => tier.includes(part));
    return at < 0 ? [] : chain.slice(0, at + 1).flat();
  }));
}

/** The imports between the relay's parts that the chains do not allow, as "from -> to" lines. */
function wrongWayImports(chains: string[][][], imports: { file: string; target: string }[]): string[] {
  const parts = new Set(chains.flat(2));
  return imports.flatMap(({ file, target }) => {
    const from = relayPartOf(file, parts);
    const to = relayPartOf(target, parts);
    if (from === undefined || to === undefined || from === to) return [];
    return relayAllowed(chains, from).has(to) ? [] : [`${file} -> ${target} (${from} may not import ${to})`];
  });
}

/** Production TypeScript files under `folder` and the repo-relative files their relative imports name. */
function relativeImports(folder: string): { file: string; target: string }[] {
  return moduleImports(folder)
    .filter(({ specifier }) => /^\.{1,2}\//.test(specifier))
    .map(({ file, specifier }) => ({ file, target: path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts') }));
}

describe('the picture of server/relay', () => {
  const chains = lintRelayChains();
  const doc = read('docs/architecture.md');
  const pictured = doc
    .split('\n')
    .filter((l) => l.startsWith('server/relay:'))
    .map((l) =>
      l
        .slice('server/relay:'.length)
        .split('<-')
        .map((tier) => tier.split(',').map((part) => part.trim().replace(/^`|`$/g, ''))),
    );
  const folders = [...new Set(chains.flat(2))].filter((p) => !p.includes('/') && !p.endsWith('.ts'));

  it('docs/architecture.md draws the chains the lint rule enforces', () => {
    expect(pictured.length, 'docs/architecture.md has no "server/relay: ... <- ..." lines').toBeGreaterThan(0);
    expect(pictured).toEqual(chains);
  });

  it('server/relay holds exactly the pictured folders, and only the pictured files beside them', () => {
    const entries = readdirSync(path.join(root, 'server/relay'), { withFileTypes: true });
    expect(entries.filter((d) => d.isDirectory()).map((d) => d.name).sort()).toEqual([...folders].sort());
    const files = entries.filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts')).map((d) => d.name);
    const picturedFiles = chains.flat(2).filter((p) => p.endsWith('.ts'));
    expect(files.sort(), 'place a new file in one of the folders, or in the picture').toEqual([...new Set(picturedFiles)].sort());
  });

  it('the table names every folder', () => {
    for (const folder of folders) expect(doc, folder).toContain(`| \`server/relay/${folder}/\` |`);
  });

  it('every import of the relay and of its data access runs the way the chains allow', () => {
    const imports = [...relativeImports('server/relay'), ...relativeImports('server/storage/relay')];
    expect(imports.length).toBeGreaterThan(100);
    expect(wrongWayImports(chains, imports)).toEqual([]);
  });

  it('views import only the types of data access: they read nothing (decision 0870)', () => {
    const dataAccess = /^(?:\.\.\/\.\.\/storage\/relay\/|\.\.\/relay-store\.js$)/;
    const values = (imports: ModuleImport[]) =>
      imports.filter(({ names, specifier }) => dataAccess.test(specifier) && !/^type\b/.test(names)).map(({ file, specifier }) => `${file}: ${specifier}`);
    const imports = moduleImports('server/relay/views');
    expect(imports.filter(({ specifier }) => dataAccess.test(specifier)).length, 'the views name their rows').toBeGreaterThan(0);
    expect(values(imports)).toEqual([]);
    const wrong = `import type { NodeRow } from '${up(2)}storage/relay/node-repository.js';\nimport { RelayStore } from '../relay-store.js';\nimport '${up(2)}storage/relay/relay-sql.js';`;
    expect(values(importsIn('server/relay/views/x.ts', wrong))).toEqual(['server/relay/views/x.ts: ../relay-store.js', `server/relay/views/x.ts: ${up(2)}storage/relay/relay-sql.js`]);
  });

  it('the check sees an import that runs the wrong way', () => {
    const wrong = [
      { file: 'server/relay/domain/voting.ts', target: 'server/relay/routes/relay-route.ts' },
      { file: 'server/relay/use-cases/pair.ts', target: 'server/relay/views/node-view.ts' },
      { file: 'server/relay/views/node-view.ts', target: 'server/relay/relay-deps.ts' },
      { file: 'server/relay/queries/node-reads.ts', target: 'server/relay/use-cases/account.ts' },
      { file: 'server/storage/relay/pg-relay-engine.ts', target: 'server/relay/domain/file-store.ts' },
      { file: 'server/storage/relay/node-repository.ts', target: 'server/relay/relay-store.ts' },
      { file: 'server/relay/relay-service.ts', target: 'server/relay/views/node-view.ts' },
    ];
    expect(wrongWayImports(chains, wrong)).toHaveLength(wrong.length);
    expect(wrongWayImports(chains, [{ file: 'server/relay/routes/item-routes.ts', target: 'server/relay/queries/item-reads.ts' }])).toEqual([]);
  });
});
