// Lint: typescript-eslint's recommended rules plus the one architectural rule
// that matters most here: the engine, the adapter and the CLI never import vscode.
import tseslint from 'typescript-eslint';

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
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'Only src/extension may import vscode.' }] }],
    },
  },
);
