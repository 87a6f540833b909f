// @ts-check
import tseslint from 'typescript-eslint';

/**
 * The folders are the architecture: imports flow one way,
 *   core <- wire <- clients <- boards <- sim <- backends <- harness <- server <- lib <- bin
 * A folder may import only from folders to its left. This rule is what keeps it so. `wire` holds
 * the schemas of what crosses a process boundary, `clients` the one client of each service: low
 * enough that the server, the worker, the scenario runner and the library all use the same ones.
 */
const layers = ['core', 'wire', 'clients', 'boards', 'sim', 'backends', 'harness', 'server', 'lib', 'bin'];

/** @param {string} layer */
function forbiddenFor(layer) {
  const above = layers.slice(layers.indexOf(layer) + 1);
  return above.flatMap((upper) => [`**/${upper}/**`, `../${upper}/*`, `../../${upper}/*`, `../../../${upper}/*`]);
}

/** @param {string} layer */
function layerPattern(layer) {
  return {
    group: forbiddenFor(layer),
    message: `${layer}/ may import only from layers below it (${layers.slice(0, layers.indexOf(layer)).join(', ') || 'none'}).`,
  };
}

/** Test-only code (vitest, test/support) stays in test/ and *.test.ts files: production never loads it. */
const testOnlyMessage = 'test-only code (vitest, test/) may be imported by tests only: move the helper to test/support.';
const testOnlyPatterns = [
  { group: ['vitest', 'vitest/*'], message: testOnlyMessage },
  { regex: '^(?:\\.\\./)+test/', message: testOnlyMessage },
];

/**
 * The two services never import each other: what both need lives in server/http (or lower, in
 * core). Patterns are regular expressions so an import of core/relay (core, allowed) is not caught.
 */
const services = ['bench', 'relay'];

/** @param {string} service */
function servicePatterns(service) {
  return services
    .filter((other) => other !== service)
    .map((other) => ({
      regex: `^(?:\\.\\./)+(?:server/)?(?:storage/)?${other}(?:/|$)`,
      message: `server/${service}/ may not import server/${other}/ or server/storage/${other}/: move what both need to server/http, server/storage's top or core.`,
    }));
}

/**
 * Inside server/bench the folders are tiers too (decisions 0675, 0880), lowest first:
 *   domain | workers <- views <- routes | pages
 * A part may not import a part of a tier to its right, and the two lower tiers never speak HTTP:
 * no express, node:http or ws, and nothing of server/http but its logger. Domain code refuses with
 * the error catalog (bench-errors.ts); routes give each code its status. `domain` and `workers`
 * share a tier: the gateway is the worker's side of the bench's rules, and each uses the other.
 * The domain answers with records and domain values, never the wire's answers: views/ shape those
 * (decision 0880), so the domain may not import the answers' schemas or types either.
 */
const benchTiers = [['domain', 'workers'], ['views'], ['routes', 'pages']];
const httpFree = benchTiers.slice(0, 2).flat();
const benchAnswersMessage = 'server/bench/domain/ returns records and domain values; views/ build the wire answers from them (decision 0880).';
const benchAnswerPatterns = [
  { regex: '^(?:\\.\\./)+wire/bench/job-answer-schemas\\.js$', message: benchAnswersMessage },
  { regex: '^(?:\\.\\./)+wire/bench/bench-schemas\\.js$', importNamePattern: '(?:Body|Schema)$', message: benchAnswersMessage },
];

/** @param {string} part */
function benchPartPatterns(part) {
  const tier = benchTiers.findIndex((parts) => parts.includes(part));
  const above = benchTiers.slice(tier + 1).flat();
  const message = `server/bench/${part}/ may not import ${above.join(', ')}${httpFree.includes(part) ? ' or HTTP (express, node:http, ws, server/http but its logger)' : ''} (decisions 0675, 0880).`;
  return [
    ...(part === 'domain' ? benchAnswerPatterns : []),
    { regex: `^\\.\\./(?:${above.join('|')})(?:/|$)`, message },
    ...(httpFree.includes(part) ? [{ regex: '^(?:express|ws|node:https?|https?)(?:/|$)', message }, { regex: '^\\.\\./\\.\\./http/(?!logger\\.js$)', message }] : []),
  ];
}

/**
 * One storage folder for both services (decision 0676): the bench's stores (server/storage/bench)
 * never import the relay's or server/relay, nor the reverse, and what both share (server/storage's
 * top and server/storage/postgres) imports neither. No storage code speaks HTTP: a database away
 * or a disk full is a storage fault (storage-faults.ts) that each service answers in its own words.
 * @param {string[]} forbidden
 */
function storagePatterns(forbidden) {
  const httpMessage = 'server/storage/ speaks no HTTP: throw a storage fault (storage-faults.ts); the services answer it.';
  return [
    ...forbidden.map((other) => ({
      regex: `^\\.{1,2}/(?:\\.\\./)*(?:server/)?${other}(?:/|$)`,
      message: `this part of server/storage may not import ${other} (server/${other} or server/storage/${other}): decision 0676.`,
    })),
    { regex: '^(?:express|ws|node:https?|https?)(?:/|$)', message: httpMessage },
    { regex: '^(?:\\.\\./)+http/', message: httpMessage },
  ];
}

/**
 * The relay by layer (server/relay/README.md, decisions 0670, 0780 and 0870). Two chains, lowest
 * first; a part may import only the parts of its tier and to its left in a chain it is in (data access is
 * server/storage/relay, the repositories, and relay-store.ts, the unit of work over them: the
 * repositories never import the store; the deps are what queries, use cases and routes share; the
 * composition root wires everything but views, which only routes call):
 *   server/storage/relay <- relay-store.ts <- domain <- relay-deps.ts <- queries <- use-cases <- routes <- composition root
 *   server/storage/relay <- relay-store.ts <- domain <- views <- routes
 * Below routes nothing speaks HTTP: no express, node:http or ws, nothing of server/http. Refusals
 * are the catalog's (`domain/relay-errors.ts`); routes/ give each code its status, and views/ shape
 * the answers from what they are given. test/architecture-picture.test.ts keeps docs/architecture.md's
 * picture equal to these chains and checks every import of the relay against them.
 */
const relayChains = [
  [['server/storage/relay'], ['relay-store.ts'], ['domain'], ['relay-deps.ts'], ['queries'], ['use-cases'], ['routes'], ['relay-service.ts', 'relay-app.ts', 'relay-store-gates.ts', 'relay-rate-limits.ts', 'relay-metrics.ts']],
  [['server/storage/relay'], ['relay-store.ts'], ['domain'], ['views'], ['routes']],
];
/** Every part of server/relay left of routes in either chain: none speaks HTTP (server/storage/relay has its own rule). */
const relayHttpFree = [
  ...new Set(relayChains.flatMap((chain) => chain.slice(0, chain.findIndex((tier) => tier.includes('routes'))).flat())),
].filter((part) => part !== 'server/storage/relay');

/** @param {string} part  What `part` may import: every part of its tier and to its left, in a chain that holds it. */
function relayAllowed(part) {
  return relayChains.flatMap((chain) => {
    const at = chain.findIndex((tier) => tier.includes(part));
    return at < 0 ? [] : chain.slice(0, at + 1).flat();
  });
}

/** @param {string} part  A part of server/relay (a folder, or a file at its top) and the imports it may not make. */
function relayPartPatterns(part) {
  const allowed = new Set(relayAllowed(part));
  const from = part.endsWith('.ts') ? './' : '../';
  const escape = (/** @type {string} */ text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const above = [...new Set(relayChains.flat(2))].filter((p) => !allowed.has(p) && p !== 'server/storage/relay');
  const others = [...allowed].filter((p) => p !== part);
  const message = `server/relay/${part} may import ${others.length ? `only ${others.join(', ')}` : 'nothing'} of the relay (the chains of eslint.config.js, decision 0870).`;
  const httpMessage = `server/relay/${part}${part.endsWith('.ts') ? '' : '/'} speaks no HTTP: throw a RelayRefusal (domain/relay-errors.ts); routes/ map it (decision 0780).`;
  return [
    ...above.map((p) => ({ regex: `^${escape(from)}${p.endsWith('.ts') ? `${escape(p.replace(/\.ts$/, '.js'))}$` : `${escape(p)}/`}`, message })),
    ...(relayHttpFree.includes(part) ? [{ regex: '^(?:express|ws|node:https?|https?)(?:/|$)', message: httpMessage }, { regex: '^(?:\\.\\./)+http/', message: httpMessage }] : []),
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'dist/**', 'examples/**/node_modules/**', '**/*.js', '!eslint.config.js', 'firmware/examples/**/build/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='process'][callee.property.name='exit']",
          message: 'process.exit belongs in an entry point (bin/) only.',
        },
      ],
    },
  },
  ...layers.map((layer) => ({
    files: [`${layer}/**/*.ts`],
    // lib/vitest.ts is the vitest fixture users import (`hilbench/vitest`): vitest is its peer.
    ignores: ['**/*.test.ts', 'lib/vitest.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...(layer === 'bin' ? [] : [layerPattern(layer)]), ...testOnlyPatterns] }] },
  })),
  ...layers
    .filter((layer) => layer !== 'bin')
    .map((layer) => ({
      files: [`${layer}/**/*.test.ts`],
      rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern(layer)] }] },
    })),
  // Later configs replace a rule's options, so each service repeats the server layer's patterns.
  ...services.map((service) => ({
    files: [`server/${service}/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...servicePatterns(service), ...testOnlyPatterns] }] },
  })),
  ...services.map((service) => ({
    files: [`server/${service}/**/*.test.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...servicePatterns(service)] }] },
  })),
  ...httpFree.map((part) => ({
    files: [`server/bench/${part}/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...servicePatterns('bench'), ...testOnlyPatterns, ...benchPartPatterns(part)] }],
    },
  })),
  ...[...new Set(relayChains.flat(2))]
    .filter((part) => part !== 'server/storage/relay')
    .map((part) => ({
      files: [part.endsWith('.ts') ? `server/relay/${part}` : `server/relay/${part}/**/*.ts`],
      ignores: ['**/*.test.ts'],
      rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...servicePatterns('relay'), ...testOnlyPatterns, ...relayPartPatterns(part)] }] },
    })),
  // Views shape what they are given and read nothing (decision 0870): of data access they may name
  // the rows' types, never a repository or the store as a value.
  {
    files: ['server/relay/views/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?:\\.\\./\\.\\./storage/relay/|\\.\\./relay-store\\.js$)',
              allowTypeImports: true,
              message: 'server/relay/views/ read nothing: import the types of data access (`import type`), and take the values from the query or use case that read them (decision 0870).',
            },
          ],
        },
      ],
    },
  },
  ...[
    { files: ['server/storage/bench/**/*.ts'], forbidden: ['relay'] },
    // The relay's data access, below its domain (decision 0870): it imports nothing of server/relay.
    { files: ['server/storage/relay/**/*.ts'], forbidden: ['bench'], below: [{ regex: '^\\.\\./\\.\\./relay/', message: 'server/storage/relay/ is the relay\'s data access, below server/relay: it imports nothing of it (decision 0870).' }] },
    // What both services share: server/storage's top and its PostgreSQL opener and faults (decision 0790).
    { files: ['server/storage/*.ts', 'server/storage/postgres/**/*.ts'], forbidden: ['bench', 'relay'] },
  ].flatMap(({ files, forbidden, below = [] }) => [
    { files, ignores: ['**/*.test.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...testOnlyPatterns, ...storagePatterns(forbidden), ...below] }] } },
    // Tests may speak HTTP (a storage fault's answer is checked end to end); they still keep the services apart.
    { files: files.map((f) => f.replace(/\.ts$/, '.test.ts')), rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern('server'), ...storagePatterns(forbidden).slice(0, forbidden.length)] }] } },
  ]),
  {
    files: ['bin/**/*.ts', 'perf/**/*.ts', 'ci/**/*.ts', 'test/**/*.ts', 'scenarios/**/*.ts', 'firmware/**/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
