// Live debugging in a real VS Code (code-server + chromium), driven through
// the UI as a person would, once with debugpy (Python) and once with lldb (C):
// open the file, click the gutter for a breakpoint, start the session from
// launch.json (F5), stop there, "Predict next step" (the CodeLens in Python,
// ctrl+alt+p in C), see the prediction inline, step over (F10), see ✓ for the
// next line and ✗ for a wrong value with its real value, "ExecVerify: Add to
// Dataset", and read the workspace's samples.jsonl from outside the editor:
// one sample whose truth is one live transition. The model is the local test
// server, scripted with answers written from reading the fixture source.
//
// code-server cannot download the Python Debugger or LLDB DAP extensions, so
// test-only extensions (fixtures/debugpy-ext, fixtures/lldb-ext) contribute
// the `debugpy` and `lldb-dap` debug types with the real adapters
// (`.venv/bin/python -m debugpy.adapter`, Debian's lldb-vscode-14). They are
// installed beside the product's .vsix into an extensions dir of this test's
// own; the product follows any debug type and knows nothing of them.
//
// The steps of each session share one workbench and run in order; a failed
// step makes the later ones fail too (each says what it awaited, with a
// screenshot).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server.ts';
import {
  editorLines,
  env,
  makeWorkspace,
  notifications,
  openFile,
  openWorkbench,
  repoRoot,
  runCommand,
  startCodeServer,
  waitUntil,
  type CodeServer,
  type EditorLine,
  type Workbench,
} from './harness.ts';

const UI_WAIT = 60_000;
const FIXTURES = join(repoRoot, 'test', 'e2e', 'fixtures');
const PYTHON = join(repoRoot, '.venv', 'bin', 'python');
const LLDB_DAP = process.env.E2E_LLDB_DAP ?? '/usr/bin/lldb-vscode-14';

interface LiveCase {
  adapter: string;
  file: string;
  /** The first line of total()'s body: `s = 0` / `int s = 0;`. */
  breakpointLine: number;
  launch: Record<string, unknown>;
  /** What must be there before the session starts (gcc's build of the C file). */
  prepare?(workspace: string): void;
  env: Record<string, string>;
  /** A local the adapter's own Variables view shows at the stop. */
  shownAtStop: RegExp;
  /** How the person asks: the CodeLens on the stopped line, or the keybinding. */
  predict: 'lens' | 'keybinding';
  /** The model's answer: the next line right, s wrong (it is 0 after the line), the rest right. */
  answer: { next_line: number; variables: { name: string; value: string; type: string }[] };
  /** Screenshot names: NAME-stopped, -predicted, -judged, -added. */
  shots: [string, string, string, string];
}

const CASES: LiveCase[] = [
  {
    adapter: 'debugpy',
    file: 'walk.py',
    breakpointLine: 2,
    launch: {
      type: 'debugpy',
      request: 'launch',
      name: 'walk.py (debugpy)',
      program: '${workspaceFolder}/walk.py',
      justMyCode: true,
      console: 'internalConsole',
    },
    env: { EXECVERIFY_E2E_DEBUGPY_PYTHON: PYTHON },
    shownAtStop: /^\s*xs\s*=\s*\[3, 1, 4\]/,
    predict: 'lens',
    answer: {
      next_line: 3,
      variables: [
        { name: 's', value: '1', type: 'int' },
        { name: 'xs', value: '[3, 1, 4]', type: 'list' },
      ],
    },
    shots: ['30-live-stopped', '31-live-predicted', '32-live-judged', '33-live-added'],
  },
  {
    adapter: 'lldb',
    file: 'total.c',
    breakpointLine: 4,
    launch: { type: 'lldb-dap', request: 'launch', name: 'total (lldb)', program: '${workspaceFolder}/total', cwd: '${workspaceFolder}' },
    prepare: (workspace) => {
      execFileSync('gcc', ['-g', '-O0', '-o', join(workspace, 'total'), join(workspace, 'total.c')], { stdio: 'pipe' });
    },
    env: { EXECVERIFY_E2E_LLDB_DAP: LLDB_DAP },
    shownAtStop: /^\s*n\s*=\s*3\b/,
    predict: 'keybinding',
    answer: {
      next_line: 5,
      variables: [
        { name: 's', value: '1', type: 'int' },
        { name: 'n', value: '3', type: 'int' },
      ],
    },
    shots: ['40-live-lldb-stopped', '41-live-lldb-predicted', '42-live-lldb-judged', '43-live-lldb-added'],
  },
];

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

let extensionsDir: string | undefined;
/** A fresh extensions dir holding the product's .vsix (as run.sh built it) and the test-only debugger extensions; made once. */
function liveExtensions(): string {
  if (extensionsDir) return extensionsDir;
  const dir = join(env.root, 'live-extensions');
  const vsixes = [
    join(repoRoot, 'execverify.vsix'),
    ...['debugpy-ext', 'lldb-ext'].map((name) => packVsix(join(FIXTURES, name), join(env.root, `e2e-${name}.vsix`))),
  ];
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
  return (extensionsDir = dir);
}

function lineOf(lines: EditorLine[], n: number): EditorLine | undefined {
  return lines.find((l) => l.line === n);
}

function extrasText(lines: EditorLine[]): string {
  return lines.map((l) => `${l.line}: ${l.extras.join(' ')}`).join('\n');
}

/** The line the debugger is stopped on, from the editor's current-line overlay. */
async function stoppedLine(page: Page): Promise<number | undefined> {
  const lines = await editorLines(page);
  return lines.find((l) => l.overlays.some((c) => c.includes('debug-top-stack-frame-line')))?.line;
}

function predictLens(page: Page) {
  return page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Predict next step' });
}

/** Rows of the Variables view (the adapter's own view of the stopped frame). */
function variableRows(page: Page, shown: RegExp) {
  return page.locator('.debug-pane .monaco-list-row', { hasText: shown });
}

for (const c of CASES) {
  describe(`live debugging in code-server: a ${c.adapter} session`, { timeout: 300_000 }, () => {
    let model: OpenAIServer;
    let server: CodeServer;
    let wb: Workbench;
    let page: Page;
    let workspace: string;
    let modelAsked = 0;
    const [stoppedShot, predictedShot, judgedShot, addedShot] = c.shots;

    /** Waits for a UI state; when it never comes, a screenshot and a message saying what was awaited. */
    async function expectState<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
      const value = await waitUntil(read, ok, UI_WAIT);
      if (!ok(value)) {
        const shot = await wb.shot(`live-failed-${c.adapter}-${what.replace(/\W+/g, '-')}`);
        assert.fail(`${c.adapter}: ${what}: not seen after ${UI_WAIT / 1000} s (last read: ${JSON.stringify(value)}); screenshot ${shot}`);
      }
      return value;
    }

    before(async () => {
      for (const [path, what] of [
        [PYTHON, 'run scripts/python-env.sh (it installs debugpy)'],
        [LLDB_DAP, 'apt-get install lldb (.ci/run does)'],
      ] as const)
        assert.ok(existsSync(path), `${path} is missing: ${what}`);
      model = await startOpenAIServer({
        script: () => {
          modelAsked++;
          return { text: JSON.stringify(c.answer) };
        },
      });
      workspace = makeWorkspace(`live-${c.adapter}`, {
        [c.file]: readFileSync(join(FIXTURES, 'live', c.file), 'utf8'),
        '.vscode/settings.json': JSON.stringify(
          { 'execverify.baseUrl': model.url, 'execverify.model': 'test-model', 'execverify.datasetDir': '.execverify' },
          null,
          2,
        ),
        '.vscode/launch.json': JSON.stringify({ version: '0.2.0', configurations: [c.launch] }, null, 2),
      });
      c.prepare?.(workspace);
      server = await startCodeServer({ name: `live-${c.adapter}`, trusted: true, extensionsDir: liveExtensions(), env: c.env });
      wb = await openWorkbench(server, workspace);
      page = wb.page;
    });
    after(async () => {
      await wb?.close();
      await server?.close();
      await model?.close();
    });

    test(`a breakpoint set in ${c.file} stops the ${c.adapter} session started from launch.json`, async () => {
      await openFile(page, c.file);
      // A click in the gutter, as a person sets one. The editor offers it (the faint hint under the
      // pointer) once a debugger for the language is known, which is a moment after the file opens.
      const gutter = page.locator('.editor-group-container.active .margin-view-overlays > div', {
        has: page.locator('.line-numbers', { hasText: new RegExp(`^${c.breakpointLine}$`) }),
      });
      const box = await gutter.first().boundingBox();
      assert.ok(box, `line ${c.breakpointLine} has no gutter`);
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
        `the ${c.adapter} session stopped on line ${c.breakpointLine}`,
        () => stoppedLine(page),
        (l) => l !== undefined,
      );
      await page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: UI_WAIT });
      const shown = await expectState(
        `the Variables view showing ${c.shownAtStop}`,
        () => variableRows(page, c.shownAtStop).allInnerTexts(),
        (t) => t.length > 0,
      );
      // The server read the stop through the session (execverify/dap): the replay's lens, on the stopped line
      // (in C too; there the test predicts with the keybinding instead).
      await expectState(
        'the "Predict next step" CodeLens in the live session',
        () => predictLens(page).count(),
        (n) => n > 0,
      );
      await wb.shot(stoppedShot);
      assert.equal(line, c.breakpointLine, 'stopped at the breakpoint, not elsewhere');
      assert.ok(await page.locator('.debug-toolbar').isVisible(), 'the debug toolbar is shown');
      assert.equal(shown.length, 1, `the adapter shows the local: ${JSON.stringify(shown)}`);
    });

    test(`"Predict next step" (${c.predict === 'lens' ? 'the CodeLens' : 'ctrl+alt+p'}) shows the prediction inline`, async () => {
      if (c.predict === 'lens') await predictLens(page).first().click();
      else await page.keyboard.press('Control+Alt+P');
      const predicted = await expectState(
        'the prediction drawn beside the code',
        () => editorLines(page),
        (ls) => ls.some((l) => l.extras.length > 0),
      );
      await wb.shot(predictedShot);
      assert.equal(modelAsked, 1, 'one question reached the model');
      const all = extrasText(predicted);
      assert.match(all, /\bs\s*[=:]\s*1\b/, `the predicted (wrong) s = 1 is drawn:\n${all}`);
      assert.ok((lineOf(predicted, c.answer.next_line)?.extras.length ?? 0) > 0, `a marker on the predicted next line ${c.answer.next_line}:\n${all}`);
      assert.doesNotMatch(all, /[✓✗]/, `no verdict before the step:\n${all}`);
    });

    test('stepping over (F10) shows the verdict inline: ✓ for the next line, ✗ for s with its real value', async () => {
      await page.keyboard.press('F10');
      const judged = await expectState(
        'the verdict drawn after the step',
        () => editorLines(page),
        (ls) => /✓/.test(extrasText(ls)) && /✗/.test(extrasText(ls)),
      );
      // The adapter's own view agrees with the verdict's truth (and the screenshot shows both).
      await expectState(
        'the Variables view showing s = 0',
        () => variableRows(page, /^\s*s\s*=/).allInnerTexts(),
        (t) => t.some((x) => /s\s*=\s*0\b/.test(x)),
      );
      await wb.shot(judgedShot);
      assert.equal(await stoppedLine(page), c.answer.next_line, `stopped on line ${c.answer.next_line} after the step`);
      const text = extrasText(judged);
      assert.match(text, new RegExp(`✓\\s*next line\\s*${c.answer.next_line}\\b`), `✓ for the next line:\n${text}`);
      assert.match(text, /✗\s*s\s*[=:]\s*0\b/, `✗ for s, with its real value 0:\n${text}`);
      assert.equal(modelAsked, 1, 'stepping asks the model nothing');
    });

    test('"ExecVerify: Add to Dataset" writes the live step to samples.jsonl, its truth one live transition', async () => {
      await runCommand(page, 'ExecVerify: Add to Dataset');
      const message = await expectState(
        'the "added to" notification',
        () => notifications(page),
        (ns) => ns.some((n) => /added to|already in|not added|not judged|no verdict/i.test(n)),
      );
      await wb.shot(addedShot);
      assert.ok(
        message.some((n) => /sample \w+ added to/.test(n)),
        `notification: ${JSON.stringify(message)}`,
      );
      // From outside the editor: the store's JSONL, each line a sample record.
      const store = join(workspace, '.execverify', 'samples.jsonl');
      assert.ok(existsSync(store), `${store} was not written`);
      const samples = readFileSync(store, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as { provenance?: { truth?: string; file?: string; function?: string } });
      assert.equal(samples.length, 1, 'one sample');
      assert.equal(samples[0]!.provenance?.truth, 'live-transition', `provenance: ${JSON.stringify(samples[0]!.provenance)}`);
      assert.equal(samples[0]!.provenance?.function, 'total');
      assert.equal(samples[0]!.provenance?.file, c.file);
    });

    test('stopping the session (Shift+F5) ends it in the editor', async () => {
      await page.keyboard.press('Shift+F5');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: UI_WAIT });
      await expectState(
        'no "Predict next step" lens once the session ended',
        () => predictLens(page).count(),
        (n) => n === 0,
      );
    });
  });
}
