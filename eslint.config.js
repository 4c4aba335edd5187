// `npm run lint` (and so CI): ESLint with typescript-eslint's type-aware rules, Prettier for layout
// (eslint-config-prettier turns off the rules that would fight it), dependency-cruiser for the
// import graph (.dependency-cruiser.cjs).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The rules that catch an unchecked `any` flowing into typed code. */
const UNSAFE_ANY = [
  '@typescript-eslint/no-unsafe-argument',
  '@typescript-eslint/no-unsafe-assignment',
  '@typescript-eslint/no-unsafe-call',
  '@typescript-eslint/no-unsafe-member-access',
  '@typescript-eslint/no-unsafe-return',
];
const off = (rules) => Object.fromEntries(rules.map((rule) => [rule, 'off']));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/generated/', '.tools/', 'coverage/', 'prisma/engine/*.mjs', 'workflows/bundle/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Services record webhooks only through withWebhooks (src/webhooks/record.ts), which
    // dispatches after the commit; the bare recorder is for that module (and tests).
    files: ['src/**/*.ts', 'schema/**/*.ts', 'rest-compat/**/*.ts', 'server/**/*.ts', 'workflows/**/*.ts'],
    ignores: ['src/webhooks/record.ts', '**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/webhooks/record.ts'],
              importNames: ['recordWebhookEvent'],
              message: 'Record webhooks with withWebhooks(db, dispatcher, (tx, webhooks) => ...): it dispatches after the commit.',
            },
          ],
        },
      ],
    },
  },
  {
    // A REST route maps the answer to the GraphQL operation written beside it (`result: (data) =>`);
    // that answer's shape is the operation's, not a TypeScript type, and the route's `response`
    // schema checks it against the OpenAPI document in test/platform/openapi.test.ts.
    files: ['rest-compat/routes/**/*.ts', 'rest-compat/live-routes.ts'],
    rules: off(UNSAFE_ANY),
  },
  {
    // Tests and benchmarks read JSON answers (`await response.json()` is `any`) and assert on
    // them; floating promises and the rest stay errors there.
    files: ['test/**/*.ts', 'bench/**/*.ts', '**/*.test.ts'],
    rules: {
      ...off(UNSAFE_ANY),
      // expect(mock.method) and async fakes of interfaces (an OIDC account store, a DNS lookup).
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
  prettier,
  {
    // After Prettier's config, which turns max-len off: Prettier wraps code at 140 columns but not
    // comments; long strings (messages, descriptions, SQL) may stay whole.
    rules: {
      'max-len': ['error', { code: 140, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreUrls: true, ignoreRegExpLiterals: true }],
    },
  },
);
