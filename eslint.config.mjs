// Lint: typescript-eslint's recommended rules plus the architectural rules
// that matter most here: the engine, the adapter and the CLI never import
// vscode; the engine imports nothing of the server, the adapter, the
// extension or the CLI (they import it); and the extension reaches the engine
// server only through its protocol (src/server/protocol.ts), never its internals.
import tseslint from 'typescript-eslint';

const VSCODE = { name: 'vscode', message: 'Only src/extension may import vscode.' };

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'media/**', '.e2e/**', 'out/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/engine/**', 'src/adapter/**', 'src/cli/**', 'src/server/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [VSCODE] }],
    },
  },
  {
    files: ['src/engine/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [VSCODE],
          patterns: [
            {
              regex: '^(\\.\\./)+(server|adapter|extension|cli)(/|$)',
              message: 'The engine is a library: src/server, src/adapter, src/extension and src/cli import it, never the other way round.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/extension/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./server/(?!protocol$)',
              message: "The extension talks to the engine server over LSP: import only src/server/protocol, never the server's internals.",
            },
          ],
        },
      ],
    },
  },
);
