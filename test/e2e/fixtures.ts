// The workspace a new user opens in the end-to-end suite, and the manifest of
// the extension as installed from the .vsix (not the source tree's copy).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { env, repoRoot } from './harness.ts';

const fixtureDir = join(repoRoot, 'test', 'e2e', 'fixtures', 'workspace');

/** The fixture workspace's files, plus .vscode/settings.json holding `settings`. */
export function fixtureFiles(settings: Record<string, unknown>): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(fixtureDir)) files[name] = readFileSync(join(fixtureDir, name), 'utf8');
  files['.vscode/settings.json'] = JSON.stringify(settings, null, 2);
  return files;
}

export interface Manifest {
  name: string;
  publisher: string;
  version: string;
  contributes?: {
    commands?: unknown[];
    debuggers?: { type: string }[];
    menus?: Record<string, unknown[]>;
    configuration?: unknown;
  };
}

/** package.json of the extension that --install-extension put into the extensions dir. */
export function manifest(): Manifest {
  const installed = readdirSync(env.extensionsDir).find((d) => d.startsWith('execverify.execverify-'));
  if (!installed) throw new Error(`the extension is not installed in ${env.extensionsDir}; run test/e2e/run.sh`);
  return JSON.parse(readFileSync(join(env.extensionsDir, installed, 'package.json'), 'utf8')) as Manifest;
}
