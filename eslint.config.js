// The one lint config. Style follows fastify/ws (standard-like: two spaces,
// no semicolons, single quotes); rules that catch bugs are errors.

import js from '@eslint/js'
import { createNodeResolver, importX } from 'eslint-plugin-import-x'
import globals from 'globals'

export default [
  {
    ignores: ['**/node_modules/**', '.run/**', 'artifacts/**', 'charts/**', '**/vendor/**', 'services/protocol/gen/**', 'harness/bench/loadgen/**']
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.node }
    },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
      'no-var': 'error',
      semi: ['error', 'never'],
      quotes: ['error', 'single', { avoidEscape: true, allowTemplateLiterals: true }],
      indent: ['error', 2, { SwitchCase: 1 }],
      'comma-dangle': ['error', 'never'],
      'object-shorthand': 'error',
      'no-console': 'off'
    }
  },
  {
    // No circle of imports anywhere: a module that needs something of the
    // module importing it wants a third module both import (the testkit's
    // index.js only re-exports; wait.js, net.js, services.js hold the code).
    // Workspace packages (@wsps/*) resolve through node_modules to their
    // files, so a circle through a package name is found too.
    files: ['**/*.js', '**/*.mjs'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createNodeResolver()] },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // The testkit is the harness's leaf library: chaos, the bench and the
      // e2e build on it, never the reverse.
      'import-x/no-restricted-paths': ['error', {
        basePath: import.meta.dirname,
        zones: [{ target: './harness/testkit', from: ['./harness/chaos', './harness/bench', './infra', './loadtest'], message: 'the testkit is a leaf: it imports no harness tool' }]
      }]
    }
  },
  {
    files: ['services/gateway/public/**/*.js', 'services/gateway/admin/*.js', 'clients/js/src/**/*.js'],
    languageOptions: { globals: { ...globals.browser } }
  },
  {
    files: ['loadtest/**/*.js'],
    languageOptions: { globals: { __ENV: 'readonly', __VU: 'readonly', __ITER: 'readonly', open: 'readonly' } }
  }
]
