// Runs the API-level end-to-end suite in a downloaded VS Code with
// @vscode/test-electron — for machines that can download VS Code (the CI here
// cannot; it runs test/e2e/ in code-server instead). See docs/e2e.md.
//
//   npm run build && node --import tsx test/electron/runTest.ts
//
// Two launches: a trusted workspace (the scenario) and an untrusted one
// (tracing must refuse). test-electron always passes --disable-workspace-trust,
// so the untrusted launch spawns the downloaded VS Code itself.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { downloadAndUnzipVSCode, runTests } from '@vscode/test-electron';

const repo = resolve(process.cwd());
const VSCODE_VERSION = process.env.VSCODE_VERSION ?? '1.100.3';

async function bundleSuite(): Promise<string> {
  const outfile = join(repo, 'out', 'electron', 'suite.js');
  await build({
    entryPoints: [join(repo, 'test', 'electron', 'suite', 'index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
    logLevel: 'warning',
  });
  return outfile;
}

function workspace(name: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'execverify-electron-')), name);
  cpSync(join(repo, 'test', 'e2e', 'fixtures', 'workspace'), dir, { recursive: true });
  return dir;
}

async function main(): Promise<number> {
  const extensionTestsPath = await bundleSuite();
  const vscodeExecutablePath = await downloadAndUnzipVSCode(VSCODE_VERSION);

  // 1. Trusted: the scenario (the suite starts the OpenAI-compatible test server in-process).
  const trusted = workspace('trusted');
  await runTests({
    vscodeExecutablePath,
    extensionDevelopmentPath: repo,
    extensionTestsPath,
    launchArgs: [trusted, '--disable-extensions'],
    extensionTestsEnv: { EXECVERIFY_E2E_SCENARIO: 'trusted', EXECVERIFY_SELFTEST_OUT: join(trusted, '..', 'selftest.json') },
  });

  // 2. Untrusted: runTests always adds --disable-workspace-trust, so launch VS Code directly.
  const untrusted = workspace('untrusted');
  const userData = mkdtempSync(join(tmpdir(), 'execverify-electron-ud-'));
  mkdirSync(join(userData, 'User'), { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({ 'security.workspace.trust.startupPrompt': 'never' }));
  const code = await new Promise<number>((done) => {
    const child = spawn(
      vscodeExecutablePath,
      [
        untrusted,
        '--no-sandbox',
        '--disable-gpu-sandbox',
        '--disable-updates',
        '--skip-welcome',
        '--skip-release-notes',
        '--disable-extensions',
        `--user-data-dir=${userData}`,
        `--extensions-dir=${join(userData, 'extensions')}`,
        `--extensionDevelopmentPath=${repo}`,
        `--extensionTestsPath=${extensionTestsPath}`,
      ],
      { stdio: 'inherit', env: { ...process.env, EXECVERIFY_E2E_SCENARIO: 'untrusted' } },
    );
    child.on('exit', (c) => done(c ?? 1));
  });
  if (code !== 0) throw new Error(`the untrusted run failed with exit code ${code}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`electron e2e failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
