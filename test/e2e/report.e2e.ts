// An evaluation report in a real VS Code (code-server + chromium): the built
// CLI writes a REval report for the trivial baseline on the five-program
// fixture, "ExecVerify: Open Evaluation Report" opens it through the file
// dialog, the webview draws its charts (no network), and a replay link starts
// the replay debugger on the example's trace.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import {
  env,
  makeWorkspace,
  openFile,
  openWorkbench,
  paletteEntries,
  repoRoot,
  runCommand,
  startCodeServer,
  waitUntil,
  type CodeServer,
  type Workbench,
} from './harness.ts';

function reportFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

describe('evaluation report in code-server', { timeout: 300_000 }, () => {
  let server: CodeServer;
  let wb: Workbench;
  const workspace = makeWorkspace('report', { 'README.md': 'evaluation report\n', 'm.py': 'def f(x):\n    return x\n' });
  const reportDir = join(workspace, 'reval-report');

  before(async () => {
    mkdirSync(reportDir, { recursive: true });
    execFileSync(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli.js'),
        'eval',
        'reval',
        '--data',
        join(repoRoot, 'test', 'fixtures', 'reval'),
        '--baseline',
        '--report',
        reportDir,
        '--workers',
        '1',
      ],
      { cwd: workspace, env: { ...process.env, EXECVERIFY_PYTHON: env.python }, stdio: 'pipe', timeout: 120_000 },
    );
    server = await startCodeServer({ name: 'report', trusted: true });
    wb = await openWorkbench(server, workspace);
  });
  after(async () => {
    await wb?.close();
    await server?.close();
  });

  test('the command opens report.html in a webview that draws every chart', async () => {
    const { page } = wb;
    await openFile(page, 'm.py'); // the extension is up (its commands registered) once a Python file is open
    // The palette lists the extension's commands once the extension host has read its manifest.
    const title = 'ExecVerify: Open Evaluation Report';
    const shown = await waitUntil(
      () => paletteEntries(page, title),
      (labels) => labels.includes(title),
      90_000,
    ).catch(async (err: unknown) => {
      await wb.shot('report-00-palette');
      throw err;
    });
    assert.ok(shown.includes(title));
    await runCommand(page, 'ExecVerify: Open Evaluation Report');
    // The simple file dialog: type the path, accept.
    const input = page.locator('.quick-input-widget input[type="text"], .quick-input-widget .quick-input-box input').first();
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    // The dialog completes what is typed as it lists folders; on a loaded
    // machine an Enter before that settles can be taken by the listing. So:
    // wait for the typed path to stand, accept, and accept again if the
    // dialog is still open (it then holds the settled path).
    const wanted = join(reportDir, 'report.html');
    await input.fill(wanted);
    await waitUntil(
      () => input.inputValue(),
      (v) => v === wanted,
      30_000,
    );
    await input.press('Enter');
    const widget = page.locator('.quick-input-widget');
    await widget.waitFor({ state: 'hidden', timeout: 20_000 }).catch(async () => {
      if ((await input.inputValue()) !== wanted) await input.fill(wanted);
      await input.press('Enter');
      await widget.waitFor({ state: 'hidden', timeout: 20_000 });
    });
    const frame = reportFrame(page);
    await frame
      .locator('h1')
      .waitFor({ timeout: 60_000 })
      .catch(async (err: unknown) => {
        await wb.shot('report-00-no-title'); // what the editor showed instead
        throw err;
      });
    assert.match(await frame.locator('h1').innerText(), /REval: baseline/);
    // Four accuracy groups and the next-line confusion map.
    const charts = frame.locator('svg.marks');
    await waitUntil(
      () => charts.count(),
      (n) => n >= 5,
      60_000,
    );
    await wb.shot('report-01-open');
    assert.ok((await frame.locator('a.replay').count()) > 0, 'worst examples with replay links');
  });

  test('a replay link starts the replay debugger on that example', async () => {
    const { page } = wb;
    await reportFrame(page).locator('a.replay').first().click();
    await page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: 60_000 });
    await wb.shot('report-02-replay');
  });
});
