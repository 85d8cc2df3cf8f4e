// The extension's views against a fake `vscode`: inline decorations from the
// server's notifications, the status bar, the webview panel (CSP, messages,
// restore), the replay bridge (debugger ↔ server ↔ panel) and the self-test.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, test } from 'node:test';
import { registerDecorations } from '../../src/extension/decorations';
import { PANEL_VIEW_TYPE, panelHtml, registerPanel } from '../../src/extension/panel';
import { registerReplayBridge } from '../../src/extension/replay';
import { runSelfTest, scheduleSelfTest } from '../../src/extension/selftest';
import { healthText, registerStatusBar, rewardsText } from '../../src/extension/statusbar';
import type { PanelData } from '../../src/server/protocol';
import { fake, makeContext, makeDebugSession, makeDocument, makeEditor, resetFake, Uri, window as fakeWindow } from '../support/fake-vscode';
import { FakeEngineClient, tick } from './extension-fakes';

beforeEach(() => resetFake());

const FILE = '/ws/m.py';
const URI = Uri.file(FILE).toString();
const SOURCE = 'def f(n):\n    x = n * 2\n    return x\n';

test('inline results from the server become ✓ / ✗ / prediction decorations at the ends of their lines', () => {
  const engine = new FakeEngineClient();
  const editor = makeEditor(makeDocument(FILE, SOURCE));
  fake.visibleTextEditors = [editor];
  const view = registerDecorations(makeContext(), { client: engine });
  engine.emit('execverify/inline', {
    uri: URI,
    items: [
      { line: 2, kind: 'verdict', text: '✓ next line 3', ok: true },
      { line: 3, kind: 'question', text: '✗ x after 3: 5 (real 6)', ok: false, hover: 'predicted 5' },
      { line: 3, kind: 'predictedNext', text: '◀ model: runs next' },
      { line: 99, kind: 'predictedValue', text: 'beyond the end' },
    ],
  });
  const [ok, bad, prediction, nextLine] = fake.decorationTypes;
  const at = (t: unknown) => editor.decorations.get(t as never) ?? [];
  assert.deepEqual(
    at(ok).map((d) => [d.range.end.line, d.range.end.character, d.renderOptions.after.contentText]),
    [[1, 13, '✓ next line 3']],
  );
  assert.deepEqual(
    at(bad).map((d) => d.renderOptions.after.contentText),
    ['✗ x after 3: 5 (real 6)'],
  );
  assert.match(at(bad)[0]!.hoverMessage.value, /predicted 5/);
  assert.deepEqual(
    at(nextLine).map((d) => d.range.start.line),
    [2],
  );
  assert.deepEqual(at(prediction), [], 'a result past the end of the document is not drawn');
  assert.equal(nextLine!.options.isWholeLine, true);
  assert.equal(view.itemsFor(URI).length, 4);
});

test('malformed inline notifications are ignored', () => {
  const engine = new FakeEngineClient();
  const view = registerDecorations(makeContext(), { client: engine });
  engine.emit('execverify/inline', { uri: URI, items: [{ line: 0, kind: 'verdict', text: 'x' }] });
  engine.emit('execverify/inline', 'garbage');
  assert.deepEqual(view.itemsFor(URI), []);
});

test('editing a document clears its results, because their line numbers refer to the run', () => {
  const engine = new FakeEngineClient();
  const editor = makeEditor(makeDocument(FILE, SOURCE));
  fake.visibleTextEditors = [editor];
  const view = registerDecorations(makeContext(), { client: engine });
  view.show(URI, [{ line: 1, kind: 'verdict', text: '✓', ok: true }]);
  fake.emitters.textChange.fire({ document: editor.document, contentChanges: [{ text: 'y' }] });
  assert.deepEqual(view.itemsFor(URI), []);
  assert.deepEqual(editor.decorations.get(fake.decorationTypes[0]!), []);
});

test('an editor that becomes visible gets the results of its document', () => {
  const engine = new FakeEngineClient();
  const view = registerDecorations(makeContext(), { client: engine });
  view.show(URI, [{ line: 1, kind: 'verdict', text: '✗ next line 3 (predicted 2)', ok: false }]);
  const editor = makeEditor(makeDocument(FILE, SOURCE));
  fake.emitters.visibleEditors.fire([editor]);
  assert.equal(editor.decorations.get(fake.decorationTypes[1]!)!.length, 1);
});

test('the status bar says whether a model, the baseline or nothing answers, and shows rewards', async () => {
  assert.equal(healthText({ state: 'baseline', endpoint: '', model: '', message: '' }).text, '$(beaker) ExecVerify: baseline');
  assert.equal(healthText({ state: 'ok', endpoint: 'http://h/v1', model: 'qwen', message: '' }).text, '$(beaker) ExecVerify: qwen');
  assert.equal(healthText({ state: 'down', endpoint: 'http://h/v1', model: 'qwen', message: 'ECONNREFUSED' }).text, '$(warning) ExecVerify: endpoint down');
  assert.match(healthText({ state: 'down', endpoint: 'http://h/v1', model: 'qwen', message: 'ECONNREFUSED' }).tooltip, /http:\/\/h\/v1: ECONNREFUSED/);
  const v = { rewards: { rIO: 1, rWhite: 0.6, r: 1.6, alpha: 0.5, gated: true }, answerer: { kind: 'baseline' as const, name: 'baseline' } };
  assert.equal(rewardsText(v as never), '$(beaker) R 1.60 · IO 1 · white 0.60 (baseline)');

  const engine = new FakeEngineClient().on('execverify/health', () => ({
    state: 'down',
    endpoint: 'http://127.0.0.1:9/v1',
    model: 'm',
    message: 'connection refused',
  }));
  const bar = registerStatusBar(makeContext(), { client: engine, log: () => {} });
  await bar.refresh();
  assert.equal(bar.text(), '$(warning) ExecVerify: endpoint down');
  assert.equal(fake.statusItems[0].backgroundColor.id, 'statusBarItem.warningBackground');
});

test('the panel HTML has a strict CSP with a nonce, loads only media/ through asWebviewUri, and no inline code', () => {
  const webview = { cspSource: 'https://webview.test', asWebviewUri: (u: Uri) => Uri.parse(`https://webview.test${u.path}`) };
  const html = panelHtml(webview as never, Uri.file('/ext') as never, 'NONCE123');
  const csp = /Content-Security-Policy" content="([^"]+)"/.exec(html)![1]!;
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-NONCE123'/);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
  const scripts = [...html.matchAll(/<script([^>]*)>([^<]*)<\/script>/g)];
  assert.equal(scripts.length, 2);
  for (const [, attrs, body] of scripts) {
    assert.match(attrs!, /nonce="NONCE123"/);
    assert.match(attrs!, /src="https:\/\/webview.test\/ext\/media\/panel(-model)?\.js"/);
    assert.equal(body, '');
  }
  assert.ok(!/style="/.test(html), 'no inline styles');
});

const panelData: PanelData = {
  run: { runId: 'run-1', uri: URI, entry: 'f(3)', steps: 2, outcome: 'returned 6', outcomeKind: 'returned', pythonVersion: '3.12' },
  rows: [
    { step: 0, event: 'call', fn: 'f', depth: 0, line: 1, text: 'def f(n):', changes: ['n = 3'], nextLine: null },
    { step: 1, event: 'line', fn: 'f', depth: 0, line: 2, text: 'x = n * 2', changes: [], nextLine: 3 },
  ],
  omittedRows: 0,
  verification: null,
};

test('the panel opens with only media/ readable, posts the run, and forwards row selection to the debugger', async () => {
  const engine = new FakeEngineClient().on('execverify/panel', () => panelData);
  const host = registerPanel(makeContext('/ext'), { client: engine, log: () => {} });
  const selections: unknown[] = [];
  host.onDidSelectStep((s) => selections.push(s));
  await host.show('run-1');
  const p = fake.panels[0]!;
  assert.equal(p.viewType, PANEL_VIEW_TYPE);
  assert.equal(p.webview.options.enableScripts, true);
  assert.deepEqual(
    p.webview.options.localResourceRoots.map((u: Uri) => u.path),
    ['/ext/media'],
  );
  assert.deepEqual(p.webview.posted, [{ type: 'data', data: panelData }]);
  p.webview.send({ type: 'selectStep', step: 1 });
  p.webview.send({ type: 'selectStep', step: 'one' });
  p.webview.send({ type: 'rm -rf', step: 1 });
  assert.deepEqual(selections, [{ runId: 'run-1', step: 1 }]);
  host.selectStep('run-1', 0);
  host.selectStep('run-other', 5);
  assert.deepEqual(p.webview.posted.slice(1), [{ type: 'selectStep', step: 0 }]);
});

test('the panel reloads when the server says its run changed, and only then', async () => {
  const engine = new FakeEngineClient().on('execverify/panel', () => panelData);
  const host = registerPanel(makeContext('/ext'), { client: engine, log: () => {} });
  await host.show('run-1');
  engine.emit('execverify/runChanged', { runId: 'run-2' });
  engine.emit('execverify/runChanged', { runId: 'run-1' });
  await tick();
  assert.equal(engine.requests.length, 2);
  assert.equal(fake.panels[0]!.webview.posted.length, 2);
});

test('the panel buttons run Add to dataset and Export…', async () => {
  const engine = new FakeEngineClient().on('execverify/panel', () => panelData);
  const host = registerPanel(makeContext('/ext'), { client: engine, log: () => {} });
  await host.show('run-1');
  fake.panels[0]!.webview.send({ type: 'addSample' });
  fake.panels[0]!.webview.send({ type: 'export' });
  assert.deepEqual(
    fake.executed.map((e) => [e.command, e.args]),
    [
      ['execverify.addSample', ['run-1']],
      ['execverify.export', []],
    ],
  );
});

test('after a reload the serializer restores the panel on the saved run', async () => {
  const engine = new FakeEngineClient().on('execverify/panel', () => panelData);
  registerPanel(makeContext('/ext'), { client: engine, log: () => {} });
  const restored = await fakeWindow._restorePanel(PANEL_VIEW_TYPE, { runId: 'run-1', selected: 1, scrollTop: 22 });
  assert.match(restored.webview.html, /Content-Security-Policy/);
  restored.webview.send({ type: 'ready', runId: 'run-1' });
  await tick();
  assert.deepEqual(engine.requests, [{ method: 'execverify/panel', params: { runId: 'run-1' } }]);
  assert.deepEqual(restored.webview.posted, [{ type: 'data', data: panelData }]);
});

test('a restored panel whose run is gone says so instead of failing', async () => {
  const engine = new FakeEngineClient().fail('execverify/panel', 'unknown_run', 'No recorded run run-1 (it may have been evicted); trace the call again.');
  registerPanel(makeContext('/ext'), { client: engine, log: () => {} });
  const restored = await fakeWindow._restorePanel(PANEL_VIEW_TYPE, { runId: 'run-1' });
  restored.webview.send({ type: 'ready', runId: 'run-1' });
  await tick();
  assert.match(fake.messages[0]!.message, /trace the call again/);
});

function bridgeSetup() {
  const engine = new FakeEngineClient();
  const selected: [string, number][] = [];
  const panel = {
    selectStep: (r: string, s: number) => void selected.push([r, s]),
    refresh: async () => {},
    onDidSelectStep: (l: (e: { runId: string; step: number }) => void) => ((panelListener = l), { dispose() {} }),
  };
  let panelListener: ((e: { runId: string; step: number }) => void) | undefined;
  const bridge = registerReplayBridge(makeContext(), { client: engine, panel: panel as never, log: () => {} });
  return { engine, bridge, selected, select: (e: { runId: string; step: number }) => panelListener!(e) };
}

function loopTrace() {
  return JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', 'editor', 'loop-trace.json'), 'utf8'));
}

/** What happens when a session replays a recording: the bridge records it as `runId`, and the adapter factory hands it the session's id with the trace. */
async function replayIn(setup: ReturnType<typeof bridgeSetup>, sessionId: string, runId: string): Promise<void> {
  const trace = loopTrace();
  setup.engine.on('execverify/trace', () => ({
    runId,
    uri: URI,
    entry: 'f(3)',
    steps: trace.steps.length,
    outcome: 'returned',
    outcomeKind: 'returned',
    pythonVersion: '3.12',
    trace,
  }));
  const result = await setup.bridge.recorder.record({ program: FILE, entry: { kind: 'call', expr: 'f(3)' }, cwd: '/ws' }, new AbortController().signal);
  assert.ok(result.ok);
  setup.bridge.onTrace(result.trace, sessionId);
}

test('the debugger’s step events reach the server and the panel once the session’s run is known', async () => {
  const setup = bridgeSetup();
  const { engine, bridge, selected } = setup;
  const session = makeDebugSession('dbg-1');
  fake.activeDebugSession = session;
  // A stop can arrive before the run id: it is held, then delivered.
  fake.emitters.debugCustomEvent.fire({ session, event: 'execverify/step', body: { stepIndex: 0, line: 1, file: FILE, frameId: 1 } });
  assert.equal(engine.notifications.length, 0);
  await replayIn(setup, 'dbg-1', 'run-3');
  fake.emitters.debugCustomEvent.fire({ session, event: 'execverify/step', body: { stepIndex: 4, line: 3, file: FILE, frameId: 1 } });
  assert.deepEqual(
    engine.notifications.map((n) => n.params),
    [
      { runId: 'run-3', step: 0, uri: URI, line: 1 },
      { runId: 'run-3', step: 4, uri: URI, line: 3 },
    ],
  );
  assert.deepEqual(selected, [
    ['run-3', 0],
    ['run-3', 4],
  ]);
  assert.deepEqual(bridge.current(), { sessionId: 'dbg-1', runId: 'run-3', step: 4, uri: URI, line: 3 });
  fake.emitters.debugTerminate.fire(session);
  assert.deepEqual(engine.notifications.at(-1)!.params, { runId: 'run-3', step: 0, ended: true });
  assert.equal(bridge.current(), undefined);
});

test('events of other debuggers and malformed step events are ignored', async () => {
  const setup = bridgeSetup();
  const { engine } = setup;
  const py = makeDebugSession('py', 'debugpy');
  await replayIn(setup, 'py', 'x');
  fake.emitters.debugCustomEvent.fire({ session: py, event: 'execverify/step', body: { stepIndex: 0, line: 1, file: FILE, frameId: 1 } });
  const ours = makeDebugSession('ev');
  await replayIn(setup, 'ev', 'run-1');
  fake.emitters.debugCustomEvent.fire({ session: ours, event: 'execverify/step', body: { stepIndex: -1 } });
  assert.deepEqual(engine.notifications, []);
});

test('selecting a row moves the replay session of that run', async () => {
  const setup = bridgeSetup();
  const { select } = setup;
  const session = makeDebugSession('dbg-2');
  fake.activeDebugSession = session;
  await replayIn(setup, 'dbg-2', 'run-5');
  select({ runId: 'run-5', step: 17 });
  await tick();
  assert.deepEqual(fake.customRequests, [{ command: 'execverify/jumpToStep', args: { stepIndex: 17 } }]);
});

test('the recorder records through the engine server, and the session replaying it is known by its run id', async () => {
  const { engine, bridge } = bridgeSetup();
  const trace = loopTrace();
  engine.on('execverify/trace', () => ({
    runId: 'run-9',
    uri: URI,
    entry: 'f(3)',
    steps: trace.steps.length,
    outcome: 'returned',
    outcomeKind: 'returned',
    pythonVersion: '3.12',
    trace,
  }));
  const result = await bridge.recorder.record({ program: FILE, entry: { kind: 'call', expr: 'f(3)' }, cwd: '/ws' }, new AbortController().signal);
  assert.equal(result.ok, true);
  assert.deepEqual(engine.requests[0]!.params, { uri: URI, entry: 'f(3)', cwd: '/ws', env: undefined, python: undefined, limits: undefined, wantTrace: true });
  const session = makeDebugSession('dbg-9');
  fake.activeDebugSession = session;
  bridge.onTrace((result as unknown as { trace: never }).trace, 'dbg-9');
  fake.emitters.debugCustomEvent.fire({ session, event: 'execverify/step', body: { stepIndex: 2, line: 2, file: FILE, frameId: 1 } });
  assert.deepEqual(
    engine.notifications.map((n) => n.params),
    [{ runId: 'run-9', step: 2, uri: URI, line: 2 }],
  );
});

test('a failed recording is a message for the Debug Console, not an exception', async () => {
  const { engine, bridge } = bridgeSetup();
  engine.fail('execverify/trace', 'syntax_error', 'm.py does not parse: invalid syntax (line 2).');
  const result = await bridge.recorder.record({ program: FILE, entry: { kind: 'script', args: [] }, cwd: '/ws' }, new AbortController().signal);
  assert.deepEqual(result, { ok: false, message: 'm.py does not parse: invalid syntax (line 2).' });
});

test('the self-test checks commands, the debugger, the client and the settings, and writes its result', async () => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const context = makeContext('/ext', manifest);
  for (const c of manifest.contributes.commands) fake.commands.set(c.command, () => {});
  fake.configurationDefaults = { 'execverify.alpha': 0.5, 'execverify.datasetDir': '.execverify' };
  const engine = new FakeEngineClient().on('execverify/health', () => ({ state: 'baseline', endpoint: '', model: '', message: '' }));
  const result = await runSelfTest(context, { client: engine });
  assert.deepEqual(
    result.checks.filter((c) => !c.ok),
    [],
  );
  assert.equal(result.ok, true);
  const names = result.checks.map((c) => c.name).join(' ');
  for (const topic of ['command', 'debug', 'client', 'setting']) assert.match(names, new RegExp(topic));

  fake.commands.delete('execverify.export');
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'ev-self-')), 'r.json');
  scheduleSelfTest(context, { client: engine }, { EXECVERIFY_SELFTEST_OUT: out });
  let written: { ok: boolean; checks: { name: string; ok: boolean; detail?: string }[] } | undefined;
  for (let i = 0; i < 100 && !written; i++) {
    await new Promise((r) => setTimeout(r, 20));
    try {
      written = JSON.parse(readFileSync(out, 'utf8'));
    } catch {
      // not yet
    }
  }
  assert.equal(written!.ok, false);
  assert.match(written!.checks.find((c) => !c.ok)!.detail!, /execverify.export/);
});
