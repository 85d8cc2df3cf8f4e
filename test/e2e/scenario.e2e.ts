// The new-user scenario in a real VS Code (code-server + chromium), driven
// through the UI only: open a workspace holding a Python file, click the
// "Trace…" CodeLens, type an input, stop on the first line, "Predict next
// step" (the model is the local OpenAI-compatible test server, right once and
// wrong once), see the prediction and then ✓ / ✗ with the real values, step
// back, read the panel's rows and rewards, add the case to the dataset,
// export verl Parquet, and read the exported file back.
//
// The steps share one workbench and run in order; a failed step makes the
// later ones fail too (each says what it was waiting for).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server.ts';
import { fixtureFiles } from './fixtures.ts';
import {
  editorLines,
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
import { FIXTURE_ENTRY, RIGHT_STEP, WRONG_STEP, scenarioScript } from './model-script.ts';

const UI_WAIT = 45_000;

/** The line the debugger is stopped on, from the editor's current-line overlay. */
async function stoppedLine(page: Page): Promise<number | undefined> {
  const lines = await editorLines(page);
  return lines.find((l) => l.overlays.some((c) => c.includes('debug-top-stack-frame-line')))?.line;
}

function lineOf(lines: EditorLine[], n: number): EditorLine | undefined {
  return lines.find((l) => l.line === n);
}

function extrasText(lines: EditorLine[]): string {
  return lines.map((l) => `${l.line}: ${l.extras.join(' ')}`).join('\n');
}

async function clickLens(page: Page, title: string): Promise<void> {
  const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: title }).first();
  await lens.waitFor({ state: 'visible', timeout: UI_WAIT });
  await lens.click();
}

async function debugAction(page: Page, codicon: string): Promise<void> {
  const button = page.locator(`.debug-toolbar .action-label.codicon-${codicon}`).first();
  await button.waitFor({ state: 'visible', timeout: UI_WAIT });
  await button.click();
}

/** The webview's document (code-server nests it: webview iframe → active-frame). */
function panelFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

describe('new-user scenario in code-server', { timeout: 420_000 }, () => {
  let model: OpenAIServer;
  const script = scenarioScript();
  let server: CodeServer;
  let wb: Workbench;
  let page: Page;
  let workspace: string;
  let exported: string;

  before(async () => {
    model = await startOpenAIServer({ script });
    workspace = makeWorkspace(
      'scenario',
      fixtureFiles({
        'execverify.baseUrl': model.url,
        'execverify.model': 'test-model',
        'execverify.reveal': 'onStep',
        'execverify.datasetDir': '.execverify',
      }),
    );
    exported = join(workspace, 'export', 'execverify-verl.parquet');
    server = await startCodeServer({ name: 'scenario', trusted: true });
    wb = await openWorkbench(server, workspace);
    page = wb.page;
  });
  after(async () => {
    await wb?.close();
    await server?.close();
    await model?.close();
  });

  test('the Python file shows a "Trace…" CodeLens on each function', async () => {
    await openFile(page, 'stats.py');
    const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Trace…' });
    await lens.first().waitFor({ state: 'visible', timeout: UI_WAIT });
    await wb.shot('03-codelens');
    const functions = (readFileSync(join(workspace, 'stats.py'), 'utf8').match(/^def /gm) ?? []).length;
    assert.equal(await lens.count(), functions);
  });

  test('"Trace…" asks for an input and the replay session stops on the first line of the function', async () => {
    await clickLens(page, 'Trace…');
    const quick = page.locator('.quick-input-widget');
    await quick.waitFor({ state: 'visible', timeout: UI_WAIT });
    // With earlier inputs or tests there is a pick list first; "Enter a call…" leads to the input box.
    const typeRow = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Enter a call' });
    if (await typeRow.isVisible()) await typeRow.click();
    const input = page.locator('.quick-input-widget input[type="text"]').first();
    assert.match(await input.inputValue(), /^running_max\(/, 'the input box is prefilled with the function name');
    await input.fill(FIXTURE_ENTRY);
    await wb.shot('04-input');
    await input.press('Enter');
    const line = await waitUntil(
      () => stoppedLine(page),
      (l) => l !== undefined,
      UI_WAIT,
    );
    await wb.shot('05-stopped-on-entry');
    // `best = xs[0]` is the first line of running_max's body.
    assert.equal(line, 5);
    assert.ok(await page.locator('.debug-toolbar').isVisible(), 'the debug toolbar is shown');
  });

  test('"Predict next step" shows the prediction inline, then ✓ with the real values after stepping', async () => {
    await clickLens(page, 'Predict next step');
    // The prediction: a marker at the predicted next line (6) and the predicted value of best.
    const predicted = await waitUntil(
      () => editorLines(page),
      (ls) => ls.some((l) => l.extras.length > 0),
      UI_WAIT,
    );
    await wb.shot('06-prediction');
    assert.equal(script.nextStepRequests(), 1, 'one next-step request reached the model');
    const all = extrasText(predicted);
    assert.match(all, /best/, `the predicted value of best is drawn:\n${all}`);
    assert.ok((lineOf(predicted, RIGHT_STEP.next_line)?.extras.length ?? 0) > 0, `a marker on the predicted next line ${RIGHT_STEP.next_line}:\n${all}`);
    assert.doesNotMatch(all, /[✓✗]/, `no verdict before the step is revealed:\n${all}`);

    await debugAction(page, 'debug-step-over');
    const after = await waitUntil(
      () => editorLines(page),
      (ls) => /✓|✗/.test(extrasText(ls)),
      UI_WAIT,
    );
    await wb.shot('07-verdict-right');
    assert.equal(
      await waitUntil(
        () => stoppedLine(page),
        (l) => l === 6,
        UI_WAIT,
      ),
      6,
    );
    const text = extrasText(after);
    assert.match(text, /✓/, `a ✓ verdict:\n${text}`);
    assert.doesNotMatch(text, /✗/, `no ✗ for a right answer:\n${text}`);
    assert.match(text, /best\s*[=:]\s*3/, `the real value best = 3 is shown:\n${text}`);
  });

  test('a wrong prediction gets ✗ with the real next line and values', async () => {
    await clickLens(page, 'Predict next step');
    await waitUntil(
      () => Promise.resolve(script.nextStepRequests()),
      (n) => n >= 2,
      UI_WAIT,
    );
    const predicted = await waitUntil(
      () => editorLines(page),
      (ls) => (lineOf(ls, WRONG_STEP.next_line)?.extras.length ?? 0) > 0,
      UI_WAIT,
    );
    await wb.shot('08-prediction-wrong');
    assert.match(extrasText(predicted), /x\s*[=:]\s*4/, `the (wrong) predicted x = 4 is drawn:\n${extrasText(predicted)}`);

    await debugAction(page, 'debug-step-over');
    const after = await waitUntil(
      () => editorLines(page),
      (ls) => /✗/.test(extrasText(ls)),
      UI_WAIT,
    );
    await wb.shot('09-verdict-wrong');
    assert.equal(
      await waitUntil(
        () => stoppedLine(page),
        (l) => l === 7,
        UI_WAIT,
      ),
      7,
    );
    const text = extrasText(after);
    assert.match(text, /✗/, `a ✗ verdict:\n${text}`);
    assert.match(text, /x\s*[=:]\s*1\b/, `the real value x = 1 is shown:\n${text}`);
    assert.match(text, /\b7\b/, `the real next line 7 is shown:\n${text}`);
  });

  test('step back returns to the previous line', async () => {
    await debugAction(page, 'debug-step-back');
    const line = await waitUntil(
      () => stoppedLine(page),
      (l) => l === 6,
      UI_WAIT,
    );
    await wb.shot('10-step-back');
    assert.equal(line, 6);
  });

  test('"Verify whole call" scores the call and the panel shows its rows and rewards', async () => {
    await runCommand(page, 'ExecVerify: Open Trace vs Prediction Panel');
    const frame = panelFrame(page);
    const rows = frame.locator('#window .row');
    await rows.first().waitFor({ state: 'visible', timeout: UI_WAIT });
    // The two predicted steps are in the timeline, one right and one wrong.
    const rowTexts = await rows.allInnerTexts();
    assert.ok(rowTexts.length >= 3, `the run's steps are listed: ${JSON.stringify(rowTexts)}`);
    // The two predicted steps: the first right (✓), the second wrong (✗, highlighted as a mismatch).
    const predicted: { mark: string; mismatch: boolean; text: string }[] = [];
    for (let i = 0; i < (await rows.count()); i++) {
      const row = rows.nth(i);
      if (!(await row.locator('.predicted').innerText()).trim()) continue;
      predicted.push({
        mark: (await row.locator('.mark').innerText()).trim(),
        mismatch: ((await row.getAttribute('class')) ?? '').split(/\s+/).includes('mismatch'),
        text: (await row.innerText()).replace(/\s+/g, ' '),
      });
    }
    assert.deepEqual(
      predicted.map((p) => [p.mark, p.mismatch]),
      [
        ['✓', false],
        ['✗', true],
      ],
      `predicted rows: ${JSON.stringify(predicted)}`,
    );
    assert.match(predicted[0]!.text, /best = xs\[0\]/);
    assert.match(predicted[1]!.text, /for x in xs\[1:\]/);

    await wb.shot('11-panel-rows');

    // Rewards come from the whole-call verification; the model gets only the output right.
    await debugAction(page, 'debug-stop');
    await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: UI_WAIT });
    await openFile(page, 'stats.py');
    await clickLens(page, 'Verify whole call');
    const input = page.locator('.quick-input-widget');
    await input.waitFor({ state: 'visible', timeout: UI_WAIT });
    const lastRun = page.locator('.quick-input-list .monaco-list-row', { hasText: FIXTURE_ENTRY });
    if (await lastRun.first().isVisible()) await lastRun.first().click();
    else {
      const box = page.locator('.quick-input-widget input[type="text"]').first();
      await box.fill(FIXTURE_ENTRY);
      await box.press('Enter');
    }
    const rewards = frame.locator('.rewards .reward');
    await rewards.first().waitFor({ state: 'visible', timeout: UI_WAIT });
    await wb.shot('12-panel-rewards');
    assert.equal(script.wholeCallRequests(), 1);
    const values = Object.fromEntries(
      (await rewards.allInnerTexts()).map((t) => {
        const [name, value] = t.trim().split(/\s+/);
        return [name, Number(value)];
      }),
    );
    const alpha = Number(/α\s*([\d.]+)/.exec(await frame.locator('.rewards').innerText())?.[1]);
    assert.equal(values.R_IO, 1, `the output is right: ${JSON.stringify(values)}`);
    assert.ok(values.R_white !== undefined && values.R_white < 1, `the white-box answers are missing: ${JSON.stringify(values)}`);
    // SEMANTICS §5: R = 2·((1−α)·R_IO + α·R_white); gating changes nothing when R_IO = 1.
    assert.ok(
      Math.abs(values.R! - 2 * ((1 - alpha) * values.R_IO! + alpha * values.R_white!)) < 0.01,
      `R matches the formula: ${JSON.stringify(values)} α=${alpha}`,
    );
    const questions = await frame.locator('table.questions tbody tr').allInnerTexts();
    assert.ok(questions.length >= 2, `per-question verdicts are listed: ${JSON.stringify(questions)}`);
  });

  test('"Add to dataset" stores the case in the workspace\'s sample store', async () => {
    await panelFrame(page).locator('button#add').click();
    const message = await waitUntil(
      () => notifications(page),
      (ns) => ns.some((n) => /added to|already in/.test(n)),
      UI_WAIT,
    );
    await wb.shot('13-added-to-dataset');
    assert.ok(
      message.some((n) => /sample \w+ added to/.test(n)),
      `notification: ${JSON.stringify(message)}`,
    );
    const store = join(workspace, '.execverify');
    assert.ok(existsSync(store) && readdirSync(store, { recursive: true }).length > 0, `${store} holds the sample`);
  });

  test('"Export…" writes a verl Parquet file that pyarrow reads back', async () => {
    await panelFrame(page).locator('button#export').click();
    const pick = page.locator('.quick-input-list .monaco-list-row', { hasText: 'verl' }).first();
    await pick.waitFor({ state: 'visible', timeout: UI_WAIT });
    await pick.click();
    // code-server's save dialog is VS Code's simple file dialog: a path in the quick input.
    const path = page.locator('.quick-input-widget input[type="text"]').first();
    await path.waitFor({ state: 'visible', timeout: UI_WAIT });
    await path.fill(exported);
    await path.press('Enter');
    const ok = page.locator('.monaco-dialog-box .monaco-button', { hasText: /^(OK|Create|Save)$/ });
    if (
      await ok
        .first()
        .isVisible()
        .catch(() => false)
    )
      await ok.first().click();
    const message = await waitUntil(
      () => notifications(page),
      (ns) => ns.some((n) => /exported \d+ records/.test(n)),
      UI_WAIT,
    );
    await wb.shot('14-exported');
    assert.ok(
      message.some((n) => n.includes(exported)),
      `notification names the file: ${JSON.stringify(message)}`,
    );
    assert.equal(readFileSync(exported).subarray(0, 4).toString(), 'PAR1', 'a Parquet file');

    const python = join(repoRoot, '.venv', 'bin', 'python');
    assert.ok(existsSync(python), `${python} is missing: run scripts/python-env.sh (pyarrow reads the export back)`);
    const read = JSON.parse(
      execFileSync(
        python,
        [
          '-c',
          'import json,sys,pyarrow.parquet as pq; t=pq.read_table(sys.argv[1]); r=t.to_pylist(); print(json.dumps({"rows":len(r),"columns":t.column_names,"first":r[0] if r else None}, default=str))',
          exported,
        ],
        { encoding: 'utf8' },
      ),
    ) as { rows: number; columns: string[]; first: Record<string, unknown> | null };
    assert.equal(read.rows, 1, 'one sample in the store, one row exported');
    for (const column of ['prompt', 'reward_model', 'extra_info']) assert.ok(read.columns.includes(column), `verl column ${column}: ${read.columns}`);
    assert.match(JSON.stringify(read.first), /running_max/, 'the exported row is about the traced call');
  });
});
