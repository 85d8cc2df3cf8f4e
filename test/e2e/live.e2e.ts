// Live debugging in a real VS Code (code-server + chromium), driven through
// the UI as a person would: open a Python file, set a breakpoint, start a
// debugpy session from launch.json, stop there, "Predict next step" (the model
// is the local test server, right on the next line and wrong on one value),
// step over, see ✓ and ✗ inline, "Add to Dataset", and read the workspace's
// samples.jsonl from outside the editor.
//
// code-server cannot download the Python Debugger extension, so a test-only
// extension (fixtures/debugpy-ext) contributes the `debugpy` debug type with
// debugpy's own adapter (`.venv/bin/python -m debugpy.adapter`). It is
// installed, beside the product's .vsix, into an extensions dir of this test's
// own; the product's tracker follows any debug type and knows nothing of it.
//
// The steps share one workbench and run in order; a failed step makes the
// later ones fail too (each says what it was waiting for, with a screenshot).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server.ts';
import { editorLines, env, makeWorkspace, openFile, openWorkbench, repoRoot, startCodeServer, waitUntil, type CodeServer, type Workbench } from './harness.ts';

const UI_WAIT = 60_000;
const FIXTURES = join(repoRoot, 'test', 'e2e', 'fixtures');
const PYTHON = join(repoRoot, '.venv', 'bin', 'python');
/** `s = 0`, the first line of total()'s body in fixtures/live/walk.py. */
const BREAKPOINT_LINE = 2;

/** Packs a folder into a .vsix (a zip with the files under extension/), which code-server installs like any other. */
function packVsix(folder: string, out: string): string {
  execFileSync(
    env.python,
    [
      '-c',
      'import os,sys,zipfile\nwith zipfile.ZipFile(sys.argv[2], "w") as z:\n    [z.write(os.path.join(sys.argv[1], n), "extension/" + n) for n in sorted(os.listdir(sys.argv[1]))]',
      folder,
      out,
    ],
    { stdio: 'pipe' },
  );
  return out;
}

/** A fresh extensions dir holding the product's .vsix (as run.sh built it) and the test-only debugpy extension. */
function installExtensions(dir: string): string {
  const vsixes = [join(repoRoot, 'execverify.vsix'), packVsix(join(FIXTURES, 'debugpy-ext'), join(env.root, 'e2e-debugpy.vsix'))];
  for (const vsix of vsixes) {
    assert.ok(existsSync(vsix), `${vsix} is missing: run the test through test/e2e/run.sh, which packages it`);
    execFileSync(
      process.execPath,
      [env.codeServer, '--extensions-dir', dir, '--user-data-dir', join(env.root, 'live-install'), '--install-extension', vsix, '--force'],
      {
        stdio: 'pipe',
      },
    );
  }
  return dir;
}

/** The line the debugger is stopped on, from the editor's current-line overlay. */
async function stoppedLine(page: Page): Promise<number | undefined> {
  const lines = await editorLines(page);
  return lines.find((l) => l.overlays.some((c) => c.includes('debug-top-stack-frame-line')))?.line;
}

function predictLens(page: Page) {
  return page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Predict next step' });
}

describe('live debugging in code-server: a debugpy session', { timeout: 300_000 }, () => {
  let model: OpenAIServer;
  let server: CodeServer;
  let wb: Workbench;
  let page: Page;
  let workspace: string;

  /** Waits for a UI state; when it never comes, a screenshot and a message saying what was awaited. */
  async function expectState<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
    const value = await waitUntil(read, ok, UI_WAIT);
    if (!ok(value)) {
      const shot = await wb.shot(`live-failed-${what.replace(/\W+/g, '-')}`);
      assert.fail(`${what}: not seen after ${UI_WAIT / 1000} s (last read: ${JSON.stringify(value)}); screenshot ${shot}`);
    }
    return value;
  }

  before(async () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run scripts/python-env.sh (it installs debugpy)`);
    model = await startOpenAIServer();
    workspace = makeWorkspace('live', {
      'walk.py': readFileSync(join(FIXTURES, 'live', 'walk.py'), 'utf8'),
      '.vscode/settings.json': JSON.stringify(
        { 'execverify.baseUrl': model.url, 'execverify.model': 'test-model', 'execverify.datasetDir': '.execverify' },
        null,
        2,
      ),
      '.vscode/launch.json': JSON.stringify(
        {
          version: '0.2.0',
          configurations: [
            {
              type: 'debugpy',
              request: 'launch',
              name: 'walk.py (debugpy)',
              program: '${workspaceFolder}/walk.py',
              justMyCode: true,
              console: 'internalConsole',
            },
          ],
        },
        null,
        2,
      ),
    });
    const extensionsDir = installExtensions(join(env.root, 'live-extensions'));
    server = await startCodeServer({ name: 'live', trusted: true, extensionsDir, env: { EXECVERIFY_E2E_DEBUGPY_PYTHON: PYTHON } });
    wb = await openWorkbench(server, workspace);
    page = wb.page;
  });
  after(async () => {
    await wb?.close();
    await server?.close();
    await model?.close();
  });

  test('a breakpoint set in walk.py stops the debugpy session started from launch.json', async () => {
    await openFile(page, 'walk.py');
    // A click in the gutter, as a person sets one. The editor offers it (the faint hint under the
    // pointer) once a debugger for Python is known, which is a moment after the file opens.
    const gutter = page.locator('.editor-group-container.active .margin-view-overlays > div', {
      has: page.locator('.line-numbers', { hasText: new RegExp(`^${BREAKPOINT_LINE}$`) }),
    });
    const box = await gutter.first().boundingBox();
    assert.ok(box, `line ${BREAKPOINT_LINE} has no gutter`);
    const hint = page.locator('.editor-group-container.active .codicon-debug-hint');
    await expectState(
      'the breakpoint hint under the pointer in the gutter',
      async () => {
        await page.mouse.move(box.x + 4, box.y + box.height / 2 + 1);
        await page.mouse.move(box.x + 6, box.y + box.height / 2);
        return hint.count();
      },
      (n) => n > 0,
    );
    await page.mouse.click(box.x + 6, box.y + box.height / 2);
    await expectState(
      'the breakpoint glyph in the gutter',
      () => page.locator('.editor-group-container.active .codicon-debug-breakpoint').count(),
      (n) => n === 1,
    );

    // F5: "Start Debugging" with launch.json's one configuration (the palette's match would be "Select and Start").
    await page.keyboard.press('F5');
    const line = await expectState(
      `the debugpy session stopped on line ${BREAKPOINT_LINE}`,
      () => stoppedLine(page),
      (l) => l !== undefined,
    );
    // debugpy's own Variables view: the stopped frame's locals as the adapter shows them.
    const xs = page.locator('.debug-pane .monaco-list-row', { hasText: 'xs' });
    await expectState(
      'the Variables view showing xs',
      () => xs.allInnerTexts(),
      (t) => t.length > 0,
    );
    await wb.shot('30-live-stopped');
    assert.equal(line, BREAKPOINT_LINE, 'stopped at the breakpoint, not elsewhere');
    assert.ok(await page.locator('.debug-toolbar').isVisible(), 'the debug toolbar is shown');
    assert.match((await xs.allInnerTexts()).join(' '), /xs\s*[=:]\s*\[3, 1, 4\]/, 'debugpy shows xs = [3, 1, 4]');
  });

  test('stopping the session (Shift+F5) takes the live lens away', async () => {
    await page.keyboard.press('Shift+F5');
    await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: UI_WAIT });
    await expectState(
      'no "Predict next step" lens once the session ended',
      () => predictLens(page).count(),
      (n) => n === 0,
    );
  });
});
