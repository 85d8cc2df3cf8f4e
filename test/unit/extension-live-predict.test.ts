// The extension's half of the live predict against a fake `vscode` and a
// scripted engine client: the tracker's events reach the server as
// execverify/liveStopped / liveResumed / liveEnded, the `execverify.liveStopped`
// context key follows the active session, and the server's execverify/dap
// requests reach the session's customRequest — only the reading requests,
// only in a trusted workspace, only for a followed session.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { activateExtension } from '../../src/extension/activation';
import { fake, makeContext, makeDebugSession, resetFake } from '../support/fake-vscode';
import { FakeEngineClient } from './extension-fakes';

function activate() {
  const engine = new FakeEngineClient().on('execverify/health', () => ({ state: 'baseline', endpoint: '', model: '', message: 'no endpoint' }));
  const api = activateExtension(makeContext(), () => engine);
  const { factory } = fake.trackerFactories[0]!;
  return { api, engine, trackerFor: (session: unknown) => factory.createDebugAdapterTracker(session) };
}

const stopped = (threadId: number) => ({ type: 'event', event: 'stopped', seq: 7, body: { reason: 'breakpoint', threadId } });
const request = (command: string, threadId: number) => ({ type: 'request', seq: 3, command, arguments: { threadId } });
const contextKey = () =>
  fake.executed
    .filter((e) => e.command === 'setContext' && e.args[0] === 'execverify.liveStopped')
    .map((e) => e.args[1])
    .at(-1);

beforeEach(() => resetFake());

test('stops, resumes and the end of a followed session reach the server; the context key follows the active session', () => {
  const { engine, trackerFor } = activate();
  assert.equal(contextKey(), false, 'set at activation');
  const session = makeDebugSession('py', 'debugpy');
  const tracker = trackerFor(session);
  fake.activeDebugSession = session;
  tracker.onDidSendMessage(stopped(4));
  assert.equal(contextKey(), true);
  tracker.onWillReceiveMessage(request('next', 4));
  assert.equal(contextKey(), false, 'running');
  tracker.onDidSendMessage(stopped(4));
  tracker.onDidSendMessage({ type: 'event', event: 'terminated', seq: 9 });
  assert.equal(contextKey(), false);
  assert.deepEqual(
    engine.notifications.filter((n) => n.method.startsWith('execverify/live')),
    [
      { method: 'execverify/liveStopped', params: { sessionId: 'py', threadId: 4, reason: 'breakpoint', debugType: 'debugpy' } },
      { method: 'execverify/liveResumed', params: { sessionId: 'py', how: 'next' } },
      { method: 'execverify/liveStopped', params: { sessionId: 'py', threadId: 4, reason: 'breakpoint', debugType: 'debugpy' } },
      { method: 'execverify/liveEnded', params: { sessionId: 'py' } },
    ],
  );
});

test('execverify/dap: reading requests reach the followed session; others, unknown sessions and an untrusted workspace are refused', async () => {
  const { engine, trackerFor } = activate();
  const session = makeDebugSession('py', 'debugpy');
  trackerFor(session).onDidSendMessage(stopped(1));
  assert.deepEqual(await engine.serverRequest('execverify/dap', { sessionId: 'py', command: 'stackTrace', args: { threadId: 1 } }), {});
  assert.deepEqual(fake.customRequests, [{ command: 'stackTrace', args: { threadId: 1 } }]);
  await assert.rejects(engine.serverRequest('execverify/dap', { sessionId: 'py', command: 'setVariable', args: {} }), /does not send “setVariable”/);
  await assert.rejects(engine.serverRequest('execverify/dap', { sessionId: 'gone', command: 'stackTrace' }), /session has ended/);
  await assert.rejects(engine.serverRequest('execverify/dap', { nope: 1 }), /malformed/);
  fake.trusted = false;
  await assert.rejects(engine.serverRequest('execverify/dap', { sessionId: 'py', command: 'evaluate', args: {} }), /not trusted/);
  assert.equal(fake.customRequests.length, 1, 'nothing else reached the session');
});

test('execverify/dap: a remote window’s vscode-remote:// source paths reach the server as paths on the extension host’s disk', async () => {
  const { engine, trackerFor } = activate();
  const frames = [
    { id: 1, name: 'total', line: 3, column: 1, source: { path: 'vscode-remote://localhost:8080/tmp/ws/walk.py' } },
    { id: 2, name: '<module>', line: 9, column: 1, source: { path: 'file:///tmp/ws/main.py' } },
    { id: 3, name: 'lib', line: 1, column: 1, source: { path: '/usr/lib/python3/x.py' } },
    { id: 4, name: 'gen', line: 1, column: 1, source: { name: '<string>', sourceReference: 5 } },
  ];
  const session = { ...makeDebugSession('py', 'debugpy'), customRequest: async () => ({ stackFrames: structuredClone(frames), totalFrames: 4 }) };
  trackerFor(session).onDidSendMessage(stopped(1));
  const got = (await engine.serverRequest('execverify/dap', { sessionId: 'py', command: 'stackTrace', args: { threadId: 1 } })) as {
    stackFrames: typeof frames;
  };
  assert.deepEqual(
    got.stackFrames.map((f) => f.source),
    [{ path: '/tmp/ws/walk.py' }, { path: '/tmp/ws/main.py' }, { path: '/usr/lib/python3/x.py' }, { name: '<string>', sourceReference: 5 }],
  );
});

test('Predict next step: the live lens’ session, or the active live session from the keybinding; Add to dataset then takes that live step', async () => {
  const { engine, trackerFor } = activate();
  const prediction = {
    id: 'pred-2',
    runId: 'run-live',
    uri: 'file:///w/walk.py',
    step: 1,
    line: 6,
    nextLine: 7,
    values: {},
    answerer: { kind: 'model', name: 'm' },
    usage: { latencyMs: 3 },
    problems: [],
  };
  engine.on('execverify/predictLive', () => prediction).on('execverify/addSample', () => ({ id: 'abc', added: true, store: '/w/.execverify' }));
  await fake.commands.get('execverify.predictNextStep')!({ sessionId: 'lens-session' });
  assert.deepEqual(engine.requests.at(-1), { method: 'execverify/predictLive', params: { sessionId: 'lens-session' } });

  const session = makeDebugSession('py', 'debugpy');
  trackerFor(session).onDidSendMessage(stopped(1));
  fake.activeDebugSession = session;
  await fake.commands.get('execverify.predictNextStep')!();
  assert.deepEqual(engine.requests.at(-1), { method: 'execverify/predictLive', params: { sessionId: 'py' } });
  await fake.commands.get('execverify.addSample')!();
  assert.deepEqual(engine.requests.at(-1), { method: 'execverify/addSample', params: { runId: 'run-live' } });
});

test('the panel marks a live step whose every truth is unknown with ?, and an unknown question is no mismatch', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const M = require('../../media/panel-model.js') as { buildRows(data: unknown): { status: string; mismatches: string[] }[] };
  const q = (kind: string, label: string, ok: boolean, unknown?: string) => ({
    kind,
    line: 9,
    label,
    predicted: '1',
    actual: 'unknown',
    ok,
    ...(unknown ? { unknown } : {}),
  });
  const row = (ok: boolean, questions: unknown[]) => ({
    step: 1,
    event: 'line',
    fn: 'walk',
    depth: 0,
    line: 9,
    text: 'total += helper(x)',
    changes: [],
    nextLine: null,
    verdict: { ok, questions, actualValues: {} },
  });
  const rows = M.buildRows({
    rows: [
      row(false, [q('next_line', 'next line after 9', false, 'continued'), q('state', 'total after 9', false, 'continued')]),
      row(true, [q('next_line', 'next line after 9', true), q('state', 's after 9', false, 'too long')]),
    ],
  });
  assert.deepEqual(
    rows.map((r) => [r.status, r.mismatches]),
    [
      ['unknown', []],
      ['ok', []],
    ],
  );
});
