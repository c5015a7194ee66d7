// Lint rules from CONVENTIONS.md: typed rules, type-only imports, no floating promises,
// no console in services and packages, no deep imports into another package's src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '.data/**',
      '.tmp/**',
      'bench/results/**',
      'coverage/**',
      'packages/console/dist/**',
      'test-artifacts/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '@toolmesh/*/src',
                '@toolmesh/*/src/*',
                '**/packages/*/src/*',
                '../../*/src/*',
              ],
              message: 'Import a package through its front door (@toolmesh/<name>), not its src/.',
            },
          ],
        },
      ],
    },
  },
  {
    // Fastify plugins are async functions by contract, whether or not they await anything.
    files: ['services/api/src/routes/**'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
  {
    // Tests read response bodies of any shape; asserting on them is the point.
    files: ['tests/**', '**/*.test.ts', '**/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Scripts and benches are command-line programs: printing to the terminal is their job.
    files: ['scripts/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['eslint.config.js', 'vitest.config.ts', 'packages/console/vite.config.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
);
