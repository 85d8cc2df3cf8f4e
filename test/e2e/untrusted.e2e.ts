// Workspace trust in a real VS Code: a second code-server profile with trust
// left on (never prompting) opens the fixture workspace in Restricted Mode;
// clicking "Trace…" there must not run the code and must say why.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server.ts';
import { fixtureFiles } from './fixtures.ts';
import { makeWorkspace, notifications, openFile, openWorkbench, startCodeServer, waitUntil, type CodeServer, type Workbench } from './harness.ts';

const UI_WAIT = 45_000;

describe('untrusted workspace in code-server', { timeout: 240_000 }, () => {
  let model: OpenAIServer;
  let server: CodeServer;
  let wb: Workbench;
  let workspace: string;
  const marker = 'ran.txt';

  before(async () => {
    model = await startOpenAIServer({ script: [{ text: '{"next_line": 6, "variables": []}' }] });
    const files = fixtureFiles({ 'execverify.baseUrl': model.url, 'execverify.model': 'test-model' });
    // If this function ever ran, it would leave a file behind.
    files['stats.py'] += `\n\ndef leave_mark():\n    open(${JSON.stringify(marker)}, "w").write("ran")\n    return 1\n`;
    workspace = makeWorkspace('untrusted', files);
    server = await startCodeServer({ name: 'untrusted', trusted: false });
    wb = await openWorkbench(server, workspace);
  });
  after(async () => {
    await wb?.close();
    await server?.close();
    await model?.close();
  });

  test('the workspace opens in Restricted Mode', async () => {
    const restricted = wb.page.locator('.statusbar-item', { hasText: 'Restricted Mode' });
    await restricted.first().waitFor({ state: 'visible', timeout: UI_WAIT });
  });

  test('"Trace…" refuses to run code and says why', async () => {
    await openFile(wb.page, 'stats.py');
    const lens = wb.page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Trace…' });
    await lens.last().waitFor({ state: 'visible', timeout: UI_WAIT });
    await lens.last().click(); // the lens of leave_mark()
    const shown = await waitUntil(
      () => notifications(wb.page),
      (ns) => ns.some((n) => /trust/i.test(n)),
      UI_WAIT,
    );
    const message = shown.find((n) => /trust/i.test(n)) ?? '';
    assert.match(message, /runs your code/i, `says why: ${message}`);
    assert.match(message, /not trusted/i, `says what is wrong: ${message}`);
    assert.match(message, /Trust the workspace/i, `says how to fix it: ${message}`);
    // The refusal comes before any input box: nothing asked, nothing run, no debug session.
    assert.equal(await wb.page.locator('.quick-input-widget').isVisible(), false, 'no input box was opened');
    assert.equal(await wb.page.locator('.debug-toolbar').isVisible(), false, 'no replay session started');
    assert.equal(existsSync(join(workspace, marker)), false, 'the code did not run');
    // execverify.baseUrl is a restricted setting: the workspace's endpoint is not even probed (no GET /v1/models).
    assert.equal(model.requests.length, 0, `nothing was sent to the workspace's endpoint: ${model.requests.map((r) => `${r.method} ${r.path}`).join(', ')}`);
    // The notification offers the fix.
    const manage = wb.page.locator('.notifications-toasts .monaco-button', { hasText: 'Manage Workspace Trust' });
    await manage.first().waitFor({ state: 'visible', timeout: UI_WAIT });
    await wb.page.waitForTimeout(500); // let the toast finish sliding in before the screenshot
    await wb.shot('20-untrusted-refusal');
  });
});
