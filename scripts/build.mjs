// Bundles each process entry point with esbuild; `vscode` stays external
// because the extension host provides it. Type checking is `npm run typecheck`.
// `--test` makes a test build: the extension keeps its environment-gated
// self-test (src/extension/selftest.ts), which the shipped bundle leaves out;
// test/e2e/run.sh builds and packages that way, scripts/package.sh refuses it
// otherwise.
import { build } from 'esbuild';

const entries = {
  extension: 'src/extension/extension.ts',
  server: 'src/server/main.ts',
  adapter: 'src/adapter/main.ts',
  cli: 'src/cli/main.ts',
};
const watch = process.argv.includes('--watch');
const testBuild = process.argv.includes('--test');
const { existsSync } = await import('node:fs');
await Promise.all(
  Object.entries(entries)
    .filter(([, file]) => existsSync(file))
    .map(([name, file]) =>
      build({
        entryPoints: [file],
        outfile: `dist/${name}.js`,
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        sourcemap: true,
        external: ['vscode'],
        // Fixed at build time, so esbuild drops the self-test from a production bundle.
        define: { 'process.env.EXECVERIFY_TEST_BUILD': testBuild ? '"1"' : '"0"' },
        banner: name === 'cli' ? { js: '#!/usr/bin/env node' } : undefined,
        logLevel: watch ? 'info' : 'warning',
      }),
    ),
);
