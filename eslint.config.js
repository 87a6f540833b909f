// @ts-check
import tseslint from 'typescript-eslint';

/**
 * The folders are the architecture: imports flow one way,
 *   core <- boards <- sim <- backends <- harness <- server <- bin
 * A folder may import only from folders to its left. This rule is what keeps it so.
 */
const layers = ['core', 'boards', 'sim', 'backends', 'harness', 'server', 'bin'];

/** @param {string} layer */
function forbiddenFor(layer) {
  const above = layers.slice(layers.indexOf(layer) + 1);
  return above.flatMap((upper) => [`**/${upper}/**`, `../${upper}/*`, `../../${upper}/*`, `../../../${upper}/*`]);
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', '**/*.js', '!eslint.config.js', 'scenarios/firmware/**/build/**'] },
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
  ...layers
    .filter((layer) => layer !== 'bin')
    .map((layer) => ({
      files: [`${layer}/**/*.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                group: forbiddenFor(layer),
                message: `${layer}/ may import only from layers below it (${layers.slice(0, layers.indexOf(layer)).join(', ') || 'none'}).`,
              },
            ],
          },
        ],
      },
    })),
  {
    files: ['bin/**/*.ts', 'bench/**/*.ts', 'ci/**/*.ts', 'test/**/*.ts', 'scenarios/**/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
