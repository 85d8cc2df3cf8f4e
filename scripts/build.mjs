// Bundles each process entry point with esbuild; `vscode` stays external
// because the extension host provides it. Type checking is `npm run typecheck`.
import { build } from 'esbuild';

const entries = {
  extension: 'src/extension/extension.ts',
  server: 'src/server/main.ts',
  adapter: 'src/adapter/main.ts',
  cli: 'src/cli/main.ts',
};
const watch = process.argv.includes('--watch');
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
        banner: name === 'cli' ? { js: '#!/usr/bin/env node' } : undefined,
        logLevel: watch ? 'info' : 'warning',
      }),
    ),
);
