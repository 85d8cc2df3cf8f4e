// The extension, installed from its .vsix into a real VS Code (code-server),
// activates when a Python file opens, registers what its manifest promises,
// and its environment-gated self-test reports the inside view.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { env, makeWorkspace, openFile, openWorkbench, paletteEntries, startCodeServer, waitForJson, type CodeServer, type Workbench } from './harness.ts';
import { fixtureFiles, manifest } from './fixtures.ts';

describe('activation in code-server', { timeout: 240_000 }, () => {
  let server: CodeServer;
  let wb: Workbench;
  const selftestOut = join(env.root, 'activation-selftest.json');
  const workspace = makeWorkspace('activation', fixtureFiles({ 'execverify.datasetDir': '.execverify' }));

  before(async () => {
    server = await startCodeServer({ name: 'activation', trusted: true, env: { EXECVERIFY_SELFTEST_OUT: selftestOut } });
    wb = await openWorkbench(server, workspace);
  });
  after(async () => {
    await wb?.close();
    await server?.close();
  });

  test('opening a Python file activates the extension and its self-test passes', async () => {
    await openFile(wb.page, 'stats.py');
    const result = (await waitForJson(selftestOut, 60_000)) as SelfTest;
    await wb.shot('01-activated');
    const failed = (result.checks ?? []).filter((c) => !c.ok);
    assert.deepEqual(failed, [], `self-test checks failed: ${JSON.stringify(failed)}`);
    assert.equal(result.ok, true);
    const names = (result.checks ?? []).map((c) => c.name).join(' ');
    // The four things the UI cannot see cheaply must each have been checked.
    for (const topic of ['command', 'debug', 'client', 'setting']) {
      assert.match(names.toLowerCase(), new RegExp(topic), `no self-test check about ${topic}: ${names}`);
    }
  });

  test('the command palette shows the commands the manifest offers in a Python editor, and hides the debugger-only ones', async () => {
    const contributed = (manifest().contributes?.commands ?? []) as { command: string; title: string; category?: string }[];
    assert.ok(contributed.length > 0, 'the manifest contributes no commands');
    const when = new Map(((manifest().contributes?.menus?.commandPalette ?? []) as { command: string; when?: string }[]).map((m) => [m.command, m.when ?? '']));
    // The context now: a Python editor is active, no debug session runs.
    const expectShown = (command: string): boolean | undefined => {
      const w = when.get(command);
      if (w === undefined || w === '' || w === 'editorLangId == python') return true;
      if (w === 'false' || /^debugType == execverify\b/.test(w) || /^inDebugMode\b/.test(w)) return false;
      return undefined; // a clause this test does not evaluate
    };
    const shown = await paletteEntries(wb.page, 'ExecVerify', () => wb.shot('02-command-palette'));
    let checked = 0;
    for (const c of contributed) {
      const expected = expectShown(c.command);
      if (expected === undefined) continue;
      const label = `${c.category ? `${c.category}: ` : ''}${c.title}`;
      assert.equal(shown.includes(label), expected, `"${label}" should ${expected ? '' : 'not '}be in the palette; shown: ${JSON.stringify(shown)}`);
      checked++;
    }
    assert.ok(checked >= contributed.length / 2, `only ${checked} of ${contributed.length} commands had a checkable when-clause`);
  });
});

interface SelfTest {
  ok: boolean;
  checks?: { name: string; ok: boolean; detail?: string }[];
}
