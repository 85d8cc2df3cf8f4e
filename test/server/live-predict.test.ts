// "Predict next step" in the user's own debug session, through the real engine
// server over its LSP stream: the test is the editor — it runs a real debugpy
// session (.venv, as a user's Python Debugger would), forwards its stops and
// resumes as the extension's tracker does (execverify/liveStopped, …), and
// answers the server's execverify/dap requests with that session's DAP
// connection. The model is the OpenAI test server; the judge is the real one.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapClient } from '../../src/engine/dap/client';
import { InlineResultsSchema, PanelDataSchema, PredictionSchema, type InlineItem } from '../../src/server/protocol';
import { startDebugpySession, type DebugpySession } from '../support/debugpy-session';
import { startOpenAIServer, type OpenAIServer, type Reply } from '../support/openai-server';
import { startServer, type ServerUnderTest } from './lsp-client';

const REPO = path.resolve(__dirname, '../..');
const PYTHON = path.join(REPO, '.venv/bin/python');
const ws = mkdtempSync(path.join(tmpdir(), 'ev-live-'));
const PROGRAM = path.join(ws, 'walk.py');
copyFileSync(path.join(REPO, 'test/fixtures/live/walk.py'), PROGRAM);
const uri = pathToFileURL(PROGRAM).href;
const SESSION = 'session-1';
const KEY = 'sk-live-test-key-never-in-the-debuggee';
/** Generous: the machine may be loaded; nothing here measures time. */
const PATIENCE = 60_000;

let model: OpenAIServer;
let server: ServerUnderTest;
let session: DebugpySession | undefined;
let dap: DapClient;
let threadId = 1;
/** Every DAP request the server sent into the session, in order. */
const sent: { command: string; args: unknown }[] = [];
/** What the client answers to workspace/configuration; a test changes it and sends didChangeConfiguration. */
const settings: Record<string, unknown> = {};
/** How many times the server asked the client to refresh its lenses (it does after each resume and after handling each stop). */
let refreshes = 0;
/** How the model answers now (a test sets it). */
let reply: (body: Record<string, unknown> | undefined) => Reply | Promise<Reply> = () => ({ text: '' });

/** The editor's side of a step: the tracker sees the request (liveResumed), then the adapter's stop (liveStopped). */
async function step(how: 'next' | 'stepIn' | 'continue'): Promise<number> {
  const stopped = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await server.connection.sendNotification('execverify/liveResumed', { sessionId: SESSION, how });
  await dap.request(how, { threadId });
  const e = await stopped;
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: SESSION, threadId, reason: e.body.reason, debugType: 'debugpy' });
  const { stackFrames } = await dap.request<DebugProtocol.StackTraceResponse['body']>('stackTrace', { threadId, levels: 1 });
  return stackFrames[0]!.line;
}

/** A next-step answer: `next`, and for each variable the prompt asks about, `values[name]`. */
function answer(next: number, values: Record<string, [string, string]>) {
  return (body: Record<string, unknown> | undefined): Reply => {
    const prompt = JSON.stringify(body?.messages ?? '');
    const asked = [...prompt.matchAll(/- (\w+): value and type/g)].map((m) => m[1]!);
    const variables = asked.filter((n) => values[n]).map((name) => ({ name, value: values[name]![0], type: values[name]![1] }));
    return { text: JSON.stringify({ next_line: next, variables }) };
  };
}

/** A model that answers only when the test lets it (`release`), and says when it was asked (`asked`). */
function held(inner: (body: Record<string, unknown> | undefined) => Reply) {
  let release!: () => void;
  let asked!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const seen = new Promise<void>((r) => (asked = r));
  reply = async (body) => {
    asked();
    await gate;
    return inner(body);
  };
  return { release, asked: seen };
}

const predict = (sessionId = SESSION) => server.connection.sendRequest('execverify/predictLive', { sessionId }).then((p) => PredictionSchema.parse(p));

const inline = (): InlineItem[] => {
  const n = [...server.notifications].reverse().find((x) => x.method === 'execverify/inline' && (x.params as { uri: string }).uri === uri);
  return n ? InlineResultsSchema.parse(n.params).items : [];
};
const verdictAt = (line: number) => until(async () => inline().find((i) => i.kind === 'verdict' && i.line === line), `the verdict at line ${line}`);

/** Polls an async probe until it gives a value (states, not times: the limit only ends a hung run). */
async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() - start > PATIENCE) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

type Lens = { range: { start: { line: number } }; command?: { title: string; command: string; arguments?: unknown[] } };
const lenses = async () => (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
const liveLens = async () => (await lenses()).find((l) => l.command?.title === 'Predict next step');

before(async () => {
  model = await startOpenAIServer({ models: ['m'], script: (r) => reply(r.body) });
  server = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications' },
    settings: Object.assign(settings, { baseUrl: model.url, model: 'm', requestTimeoutMs: 60_000 }),
    env: { EXECVERIFY_API_KEY: KEY },
  });
  await server.open(PROGRAM, readFileSync(PROGRAM, 'utf8'));
  // The user's debug session: debugpy's adapter, the program under it, a breakpoint at `total = 0` in walk().
  session = await startDebugpySession({ python: PYTHON, program: PROGRAM, breakpoints: [6], cwd: ws, showReturnValue: true });
  ({ dap, threadId } = session);
  server.connection.onRequest('workspace/codeLens/refresh', () => {
    refreshes += 1;
    return null;
  });
  // The extension's side of execverify/dap: the session's own requests (customRequest in VS Code).
  server.connection.onRequest('execverify/dap', async (p: { sessionId: string; command: string; args?: unknown }) => {
    sent.push({ command: p.command, args: p.args });
    return dap.request(p.command, p.args);
  });
});

after(async () => {
  await session?.close();
  await server?.close();
  await model?.close();
});

test('a stop of a followed session puts "Predict next step" on its line; a resume takes it away', async () => {
  assert.equal(await liveLens(), undefined, 'no session stopped yet');
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: SESSION, threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const lens = await until(liveLens, 'the live lens');
  assert.equal(lens.range.start.line, 5, 'line 6, 0-based');
  assert.equal(lens.command?.command, 'execverify.predictNextStep');
  assert.deepEqual(lens.command?.arguments, [{ sessionId: SESSION }]);
  assert.deepEqual(
    sent.map((s) => s.command),
    ['stackTrace'],
    'where it stopped is read through the session (one stackTrace), nothing else runs in it',
  );
  await server.connection.sendNotification('execverify/liveResumed', { sessionId: SESSION, how: 'next' });
  await until(async () => ((await liveLens()) ? undefined : true), 'the lens gone while the session runs');
  // Back where it was for the next tests: the breakpoint line, stopped.
  assert.equal(await stepBack(), 6);
});

/** The test above resumed nothing really (only told the server): tell it the session is stopped again. */
async function stepBack(): Promise<number> {
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: SESSION, threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const lens = await until(liveLens, 'the live lens again');
  return lens.range.start.line + 1;
}

test('an adapter error is a clear message; the server goes on', async () => {
  // A stop on a thread the adapter does not know: its stackTrace fails.
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: 'other', threadId: 999, reason: 'breakpoint', debugType: 'debugpy' });
  await assert.rejects(predict('other'), /The debug session's stop could not be read: .+/);
  await assert.rejects(predict('never-seen'), /not stopped/);
});

test('predict at a breakpoint: drawn inline as a replay prediction; stepping judges it (right); the step becomes a live-transition sample', async () => {
  sent.length = 0;
  reply = answer(7, { total: ['0', 'int'], xs: ['[1, 2]', 'list'] });
  const p = await predict();
  assert.equal(p.line, 6);
  assert.equal(p.nextLine, 7);
  assert.deepEqual(p.values.total, { value: '0', type: 'int' });
  assert.equal(p.answerer.kind, 'model');
  const shown = await until(async () => (inline().length ? inline() : undefined), 'the inline prediction');
  assert.deepEqual(
    shown.map((i) => [i.line, i.kind]),
    [
      [6, 'predictedValue'],
      [7, 'predictedNext'],
    ],
  );
  assert.match(shown[0]!.text, /^m .*predicts: .*total = 0/);
  // What ran in the debuggee: the stack, and one evaluate of our exact reader, carrying no secret.
  assert.deepEqual([...new Set(sent.map((s) => s.command))].sort(), ['evaluate', 'stackTrace']);
  for (const s of sent.filter((x) => x.command === 'evaluate')) {
    assert.match((s.args as { expression: string }).expression, /execverify\.dap_entry.*\.exact\(/);
  }
  assert.ok(!JSON.stringify(sent).includes(KEY), 'the API key never reaches the debuggee');
  await assert.rejects(server.connection.sendRequest('execverify/reveal', { predictionId: p.id }), /judged when the debug session steps on/);
  await assert.rejects(server.connection.sendRequest('execverify/addSample', { runId: p.runId }), /not judged yet/);

  assert.equal(await step('next'), 7);
  const verdict = await verdictAt(6);
  assert.equal(verdict.ok, true);
  assert.match(verdict.text, /^✓ next line 7/);
  assert.match(verdict.text, /✓ total = 0/);
  assert.match(verdict.text, /✓ xs = \[1, 2\]/);
  const panel = PanelDataSchema.parse(await server.connection.sendRequest('execverify/panel', { runId: p.runId }));
  const row = panel.rows.find((r) => r.step === 1)!;
  assert.equal(row.line, 6);
  assert.equal(row.prediction?.nextLine, 7);
  assert.equal(row.verdict?.ok, true);
  assert.equal(panel.rows.length, 3, 'the transition: the call, the asked line, its next line');

  const added = (await server.connection.sendRequest('execverify/addSample', { runId: p.runId })) as { id: string; added: boolean; store: string };
  assert.equal(added.added, true);
  const lines = readFileSync(path.join(added.store, 'samples.jsonl'), 'utf8').trim().split('\n');
  const sample = JSON.parse(lines.at(-1)!) as { id: string; provenance: { truth?: string; file: string; function: string } };
  assert.equal(sample.id, added.id);
  assert.equal(sample.provenance.truth, 'live-transition');
  assert.equal(sample.provenance.file, 'walk.py');
  assert.equal(sample.provenance.function, 'walk');
});

test('a wrong prediction is ✗ where wrong; a value that cannot be read exactly is unknown, never ✓/✗; no sample', async () => {
  reply = answer(9, { s: ["'a'", 'str'], total: ['1', 'int'], xs: ['[1, 2]', 'list'] });
  const p = await predict();
  assert.equal(p.line, 7);
  assert.equal(await step('next'), 8);
  const verdict = await verdictAt(7);
  assert.equal(verdict.ok, false);
  assert.match(verdict.text, /✗ next line 8 \(predicted 9\)/);
  assert.match(verdict.text, /✗ total = 0 \(predicted 1\)/);
  assert.match(verdict.text, /✓ xs = \[1, 2\]/);
  assert.match(verdict.text, /\? s unknown/);
  assert.doesNotMatch(verdict.text, /[✓✗] s\b/);
  await assert.rejects(server.connection.sendRequest('execverify/addSample', { runId: p.runId }), /unknown/);
});

test('a step while the model is still answering: judged against the stop that followed the ask; a second predict meanwhile is refused', async () => {
  const model = held(answer(9, { x: ['1', 'int'], total: ['0', 'int'], xs: ['[1, 2]', 'list'] }));
  const pending = predict();
  await model.asked;
  await assert.rejects(predict(), /still being answered/);
  assert.equal(await step('next'), 9, 'the user stepped on while the model thought');
  model.release();
  const p = await pending;
  assert.equal(p.line, 8);
  const verdict = await verdictAt(8);
  assert.match(verdict.text, /^✓ next line 9/);
  assert.match(verdict.text, /✓ x = 1/);
});

test('stepping into a call keeps waiting, the prediction drawn; the verdict comes at the line after the call', async () => {
  reply = answer(8, { total: ['2', 'int'], x: ['1', 'int'] });
  const p = await predict();
  assert.equal(p.line, 9);
  const from = server.notifications.length;
  const lines: number[] = [];
  for (const how of ['stepIn', 'next', 'next', 'next', 'next', 'next'] as const) {
    const handled = refreshes + 2; // the resume's lens refresh, then the stop's, once the server has handled it
    lines.push(await step(how));
    await until(async () => (refreshes >= handled ? true : undefined), `the server handling the stop at line ${lines.at(-1)}`);
    if (inline().some((i) => i.kind === 'verdict' && i.line === 9)) break;
  }
  assert.equal(lines[0], 2, 'into helper');
  assert.equal(lines.at(-1), 8, `judged at the loop's next line (stops: ${lines.join(', ')})`);
  const verdicts = server.notifications
    .slice(from)
    .filter((n) => n.method === 'execverify/inline')
    .flatMap((n) => InlineResultsSchema.parse(n.params).items.filter((i) => i.kind === 'verdict' && i.line === 9));
  assert.ok(verdicts.length > 0);
  for (const v of verdicts) assert.match(v.text, /^✓ next line 8 .*✓ total = 2/, 'never judged at a stop inside the call');
});

test('resumed with continue: every answer unknown, drawn as neither ✓ nor ✗', async () => {
  assert.equal(await step('next'), 9, 'the loop again, x = 2');
  await dap.request('setBreakpoints', { source: { path: PROGRAM }, breakpoints: [{ line: 6 }, { line: 10 }] });
  reply = answer(8, { total: ['2', 'int'] });
  const p = await predict();
  assert.equal(p.line, 9);
  assert.equal(await step('continue'), 10);
  const verdict = await verdictAt(9);
  assert.equal(verdict.ok, undefined, 'nothing judged: no ✓/✗ colour');
  assert.match(verdict.text, /^\? next line unknown/);
  assert.doesNotMatch(verdict.text, /[✓✗]/);
  await assert.rejects(server.connection.sendRequest('execverify/addSample', { runId: p.runId }), /unknown/);
});

test('no endpoint set: the baseline answers, labelled as such, with a notice; it is judged as any answer', async () => {
  const endpoint = settings.baseUrl;
  settings.baseUrl = '';
  await server.connection.sendNotification('workspace/didChangeConfiguration', { settings: {} });
  try {
    const asked = model.requests.length;
    const p = await predict();
    assert.equal(p.line, 10);
    assert.equal(p.answerer.kind, 'baseline');
    assert.equal(model.requests.length, asked, 'no model was asked');
    const shown = await until(async () => inline().find((i) => i.kind === 'predictedValue' && i.line === 10), 'the baseline prediction');
    assert.match(shown.text, /^baseline predicts:/);
    assert.ok(server.notifications.some((n) => n.method === 'execverify/notice' && /baseline/.test((n.params as { message: string }).message)));
    await step('next'); // `return total`: the frame returns into main
    const verdict = await verdictAt(10);
    assert.match(verdict.text, /[✓✗] returns|[✓✗] next line/);
  } finally {
    settings.baseUrl = endpoint;
    await server.connection.sendNotification('workspace/didChangeConfiguration', { settings: {} });
  }
});

test('the session ends while the model is answering: a clear error, nothing drawn, the server goes on', async () => {
  const model = held(answer(-1, { total: ['3', 'int'] }));
  const before = inline();
  const pending = predict();
  await model.asked;
  const terminated = dap.waitFor('terminated');
  await dap.request('disconnect', { terminateDebuggee: true });
  await server.connection.sendNotification('execverify/liveEnded', { sessionId: SESSION });
  await terminated.catch(() => undefined);
  // The server has taken the end in (it handles messages in order; the lens request comes after it).
  await until(async () => ((await liveLens()) ? undefined : true), 'the ended session without a lens');
  model.release();
  await assert.rejects(pending, /ended while the model was answering/);
  assert.deepEqual(inline(), before, 'nothing new drawn');
  assert.ok(existsSync(PROGRAM));
});

test('in an untrusted workspace nothing runs: no request reaches the session, predict is refused', async () => {
  const untrusted = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications', trusted: false },
    settings: { baseUrl: model.url, model: 'm' },
  });
  try {
    const reached: string[] = [];
    untrusted.connection.onRequest('execverify/dap', (p: { command: string }) => {
      reached.push(p.command);
      return {};
    });
    await untrusted.connection.sendNotification('execverify/liveStopped', { sessionId: 'u', threadId: 1, reason: 'breakpoint', debugType: 'debugpy' });
    const before = model.requests.length;
    await assert.rejects(untrusted.connection.sendRequest('execverify/predictLive', { sessionId: 'u' }), (e: { data?: { code?: string }; message: string }) => {
      assert.equal(e.data?.code, 'untrusted');
      assert.match(e.message, /not trusted/);
      return true;
    });
    // A request after the notification, answered: the server has handled the stop by now.
    await untrusted.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } });
    assert.deepEqual(reached, [], 'nothing was sent into the session');
    assert.equal(model.requests.length, before, 'no model was asked');
  } finally {
    await untrusted.close();
  }
});
