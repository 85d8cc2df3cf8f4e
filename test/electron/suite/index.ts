// The @vscode/test-electron suite: the same scenarios as test/e2e/, through
// the `vscode` API from inside the extension host (bundled by runTest.ts).
// EXECVERIFY_E2E_SCENARIO picks "trusted" (the new-user scenario) or
// "untrusted" (tracing must refuse). A tiny sequential runner: the extension
// host has no test framework, and node:test's runner would spawn processes.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { startOpenAIServer, type OpenAIServer } from '../../support/openai-server';
import { FIXTURE_ENTRY, RIGHT_STEP, WRONG_STEP, scenarioScript } from '../../e2e/model-script';

interface InlineItem {
  line: number;
  kind: string;
  text: string;
  ok?: boolean;
}
/** What activate() returns (src/extension/extension.ts); only the parts the suite reads. */
interface ExtensionApi {
  inline: { itemsFor(uri: string): InlineItem[] };
  panel: { lastData(): { rows: { step: number; prediction?: unknown; verdict?: { ok: boolean } }[] } | undefined };
  replay: { current(): { runId: string; step: number; line: number | undefined } | undefined };
}

type Case = { name: string; run: () => Promise<void> };

async function until<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

async function runCases(cases: Case[]): Promise<void> {
  let failed = 0;
  for (const c of cases) {
    try {
      await c.run();
      console.log(`ok - ${c.name}`);
    } catch (e) {
      failed++;
      console.log(`not ok - ${c.name}\n  ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
  console.log(`# pass ${cases.length - failed}\n# fail ${failed}`);
  if (failed > 0) throw new Error(`${failed} of ${cases.length} cases failed`);
}

function fixtureUri(): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  assert.ok(folder, 'the test workspace is open');
  return vscode.Uri.joinPath(folder.uri, 'stats.py');
}

async function activate(): Promise<ExtensionApi> {
  const doc = await vscode.workspace.openTextDocument(fixtureUri());
  await vscode.window.showTextDocument(doc);
  const ext = vscode.extensions.getExtension<ExtensionApi>('execverify.execverify');
  assert.ok(ext, 'the extension is installed');
  return ext.isActive ? ext.exports : ext.activate();
}

async function threadId(session: vscode.DebugSession): Promise<number> {
  const r = (await session.customRequest('threads')) as { threads: { id: number }[] };
  assert.ok(r.threads[0], 'the replay session has a thread');
  return r.threads[0].id;
}

function trustedCases(model: OpenAIServer, script: ReturnType<typeof scenarioScript>): Case[] {
  let api: ExtensionApi;
  let session: vscode.DebugSession;
  const uri = () => fixtureUri().toString();
  const step = async (request: 'next' | 'stepBack', toLine: number) => {
    await session.customRequest(request, { threadId: await threadId(session) });
    await until(() => api.replay.current()?.line, (l) => l === toLine, `line ${toLine} after ${request}`);
  };
  return [
    {
      name: 'opening a Python file activates the extension; the self-test passes',
      run: async () => {
        await vscode.workspace.getConfiguration('execverify').update('baseUrl', model.url, vscode.ConfigurationTarget.Workspace);
        await vscode.workspace.getConfiguration('execverify').update('model', 'test-model', vscode.ConfigurationTarget.Workspace);
        api = await activate();
        const out = process.env.EXECVERIFY_SELFTEST_OUT;
        assert.ok(out, 'EXECVERIFY_SELFTEST_OUT is set by runTest.ts');
        const result = await until(() => (existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as { ok: boolean; checks: unknown[] }) : undefined), (r) => r !== undefined, 'the self-test JSON', 60_000);
        assert.equal(result?.ok, true, JSON.stringify(result));
      },
    },
    {
      name: 'every contributed command is registered',
      run: async () => {
        const pkg = vscode.extensions.getExtension('execverify.execverify')!.packageJSON as { contributes: { commands: { command: string }[] } };
        const all = new Set(await vscode.commands.getCommands(true));
        assert.deepEqual(pkg.contributes.commands.map((c) => c.command).filter((c) => !all.has(c)), []);
      },
    },
    {
      name: 'a "Trace…" CodeLens sits on each function',
      run: async () => {
        const lenses = await until(
          async () => (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', fixtureUri())) ?? [],
          (ls) => ls.some((l) => l.command?.title === 'Trace…'),
          'CodeLens',
        );
        const lines = lenses.filter((l) => l.command?.title === 'Trace…').map((l) => l.range.start.line + 1);
        assert.deepEqual(lines, [4, 12]);
      },
    },
    {
      name: 'Trace… with an input starts a replay session stopped on the first line',
      run: async () => {
        const started = new Promise<vscode.DebugSession>((resolve) => {
          const d = vscode.debug.onDidStartDebugSession((s) => {
            d.dispose();
            resolve(s);
          });
        });
        await vscode.commands.executeCommand('execverify.trace', uri(), 'running_max', FIXTURE_ENTRY);
        session = await started;
        assert.equal(session.type, 'execverify');
        await until(() => api.replay.current()?.line, (l) => l === 5, 'the stop on line 5');
      },
    },
    {
      name: 'Predict next step: the prediction is drawn, then ✓ after stepping',
      run: async () => {
        const prediction = (await vscode.commands.executeCommand('execverify.predictNextStep')) as { nextLine: number | null } | undefined;
        assert.equal(prediction?.nextLine, RIGHT_STEP.next_line);
        assert.equal(script.nextStepRequests(), 1);
        assert.ok(api.inline.itemsFor(uri()).some((i) => i.kind === 'predictedNext' && i.line === RIGHT_STEP.next_line));
        await step('next', 6);
        const verdicts = await until(() => api.inline.itemsFor(uri()).filter((i) => i.kind === 'verdict'), (v) => v.length > 0, 'a verdict');
        assert.ok(verdicts.every((v) => v.ok === true), JSON.stringify(verdicts));
      },
    },
    {
      name: 'a wrong prediction gets ✗ with the real values',
      run: async () => {
        const prediction = (await vscode.commands.executeCommand('execverify.predictNextStep')) as { nextLine: number | null } | undefined;
        assert.equal(prediction?.nextLine, WRONG_STEP.next_line);
        await step('next', 7);
        const verdicts = await until(() => api.inline.itemsFor(uri()).filter((i) => i.kind === 'verdict' && i.ok === false), (v) => v.length > 0, 'a ✗ verdict');
        assert.match(verdicts.map((v) => v.text).join(' '), /x\s*[=:]\s*1\b/);
      },
    },
    {
      name: 'step back returns to line 6',
      run: async () => {
        await step('stepBack', 6);
      },
    },
    {
      name: 'the panel lists the run with one right and one wrong step; Verify whole call gives rewards',
      run: async () => {
        await vscode.commands.executeCommand('execverify.openPanel');
        const data = await until(() => api.panel.lastData(), (d) => d !== undefined, 'panel data');
        const judged = data!.rows.filter((r) => r.verdict);
        assert.deepEqual(judged.map((r) => r.verdict!.ok), [true, false]);
        await vscode.debug.stopDebugging(session);
        const verification = (await vscode.commands.executeCommand('execverify.verifyCall', uri(), 'running_max', FIXTURE_ENTRY)) as
          | { rewards: { rIO: number; rWhite: number; r: number; alpha: number } }
          | undefined;
        assert.ok(verification, 'a verification');
        const { rIO, rWhite, r, alpha } = verification.rewards;
        assert.equal(rIO, 1);
        assert.ok(Math.abs(r - 2 * ((1 - alpha) * rIO + alpha * rWhite)) < 1e-9);
      },
    },
    {
      name: 'add to dataset, export verl Parquet',
      run: async () => {
        const added = (await vscode.commands.executeCommand('execverify.addSample')) as { added: boolean } | undefined;
        assert.equal(added?.added, true);
        const out = join(fixtureUri().fsPath, '..', 'export', 'verl.parquet');
        const result = (await vscode.commands.executeCommand('execverify.export', 'verl', out)) as { records: number } | undefined;
        assert.equal(result?.records, 1);
        assert.equal(readFileSync(out).subarray(0, 4).toString(), 'PAR1');
      },
    },
  ];
}

function untrustedCases(model: OpenAIServer): Case[] {
  return [
    {
      name: 'in an untrusted workspace Trace… runs nothing',
      run: async () => {
        assert.equal(vscode.workspace.isTrusted, false, 'the workspace is untrusted');
        await activate();
        let started = false;
        const d = vscode.debug.onDidStartDebugSession(() => (started = true));
        // The command shows its refusal in a (non-modal) warning and returns without running.
        await vscode.commands.executeCommand('execverify.trace', fixtureUri().toString(), 'running_max', FIXTURE_ENTRY);
        d.dispose();
        assert.equal(started, false, 'no replay session started');
        assert.equal(model.requests.filter((r) => r.method === 'POST').length, 0, 'no question reached the model');
      },
    },
  ];
}

export async function run(): Promise<void> {
  const script = scenarioScript();
  const model = await startOpenAIServer({ script });
  try {
    const scenario = process.env.EXECVERIFY_E2E_SCENARIO ?? 'trusted';
    await runCases(scenario === 'untrusted' ? untrustedCases(model) : trustedCases(model, script));
  } finally {
    await model.close();
  }
}
