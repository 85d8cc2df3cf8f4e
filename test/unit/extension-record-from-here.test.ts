// "ExecVerify: Record from Here" in the extension, against a fake `vscode` and
// a scripted engine client: at a followed session's stop it asks the server
// to record, saves the trace (temp + rename) and starts the replay debugger
// on it; the replay session of that file is the server's run (no second
// adoption); a refusal is the server's one line; no stop, no request.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, beforeEach, test } from 'node:test';
import { activateExtension } from '../../src/extension/activation';
import { TRACE_SCHEMA_VERSION, TraceSchema, type Trace } from '../../src/engine/trace/schema';
import { fake, makeContext, makeDebugSession, resetFake } from '../support/fake-vscode';
import { EngineRequestError } from '../../src/extension/engine-client';
import { FakeEngineClient } from './extension-fakes';

const ext = mkdtempSync(path.join(tmpdir(), 'ev-record-ext-'));
after(() => rmSync(ext, { recursive: true, force: true }));

/** The rest of `total` from line 8, as the server would return it. */
const trace: Trace = TraceSchema.parse({
  schema: TRACE_SCHEMA_VERSION,
  python: { version: '3.12.1', implementation: 'cpython', backend: 'monitoring', isolation: 'none' },
  entry: { kind: 'call', expr: 'total  # recorded from line 8 of a live session' },
  files: [{ path: '/w/record.py', source: 'def total(xs):\n    acc = 0\n' }],
  steps: [
    { i: 0, event: 'call', frame: 0, parent: null, fn: 'total', file: 0, line: 8, depth: 0, set: { acc: { repr: '0', type: 'int', literal: true } } },
    { i: 1, event: 'return', frame: 0, fn: 'total', file: 0, line: 10, depth: 0, value: { repr: '14', type: 'int', literal: true } },
  ],
  outcome: { kind: 'returned', value: { repr: '14', type: 'int', literal: true } },
  stdout: { text: '', truncated: false },
  stderr: { text: '', truncated: false },
  stats: { events: 2, wallMs: 1 },
});
const summary = {
  runId: 'run-7',
  uri: 'file:///w/record.py',
  entry: 'total',
  steps: 2,
  outcome: 'returned 14',
  outcomeKind: 'returned',
  pythonVersion: '3.12.1',
};

function activate(engine: FakeEngineClient) {
  engine.on('execverify/health', () => ({ state: 'baseline', endpoint: '', model: '', message: 'no endpoint' }));
  const api = activateExtension(makeContext(ext), () => engine);
  const session = makeDebugSession('py', 'debugpy');
  const tracker = fake.trackerFactories[0]!.factory.createDebugAdapterTracker(session);
  fake.activeDebugSession = session;
  return { api, tracker };
}
const run = () => fake.commands.get('execverify.recordFromHere')!() as Promise<string | undefined>;
const stopped = { type: 'event', event: 'stopped', seq: 1, body: { reason: 'breakpoint', threadId: 3 } };

beforeEach(() => resetFake());

test('at a stop: recorded by the server, saved, and replayed in the execverify debugger as the same run', async () => {
  const engine = new FakeEngineClient().on('execverify/recordFromHere', () => ({ ...summary, trace }));
  const { api, tracker } = activate(engine);
  tracker.onDidSendMessage(stopped);
  const file = await run();
  assert.deepEqual(
    engine.requests.filter((r) => r.method === 'execverify/recordFromHere'),
    [{ method: 'execverify/recordFromHere', params: { sessionId: 'py', workDoneToken: 'record-1' } }],
  );
  assert.deepEqual(
    fake.progress.map((p) => p.options),
    [{ location: 15, title: 'ExecVerify: recording the rest of the call', cancellable: true }],
    'a cancellable notification while recording',
  );
  assert.ok(file && path.dirname(file) === path.join(ext, 'globalStorage'), String(file));
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), trace);
  assert.deepEqual(readdirSync(path.dirname(file)), [path.basename(file)], 'no temporary file left');
  assert.equal(fake.debugStarts.length, 1);
  assert.deepEqual(fake.debugStarts[0]!.config, {
    type: 'execverify',
    request: 'launch',
    name: 'Replay total from line 8',
    traceFile: file,
    stopOnEntry: true,
  });
  // The replay session reading that file is the server's run: nothing is adopted a second time.
  api.replay.onTrace(TraceSchema.parse(JSON.parse(readFileSync(file, 'utf8'))), 'replay-1', file);
  api.replay.onTrace(trace, 'replay-2', path.join(ext, 'elsewhere.json'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(engine.requests.filter((r) => r.method === 'execverify/adopt').length, 1, 'only the trace file the command did not write is adopted');
});

test("a refusal is the server's one line; without a stopped session nothing is asked", async () => {
  const engine = new FakeEngineClient().fail(
    'execverify/recordFromHere',
    'trace_failed',
    'Cannot record from here: recording from a live session needs Python 3.12+ (sys.monitoring); on Python 3.11 there is one settrace slot and the debugger owns it',
  );
  const { tracker } = activate(engine);
  assert.equal(await run(), undefined);
  assert.equal(engine.requests.filter((r) => r.method === 'execverify/recordFromHere').length, 0);
  assert.match(fake.messages.at(-1)!.message, /stop your Python debug session at a line/);
  tracker.onDidSendMessage(stopped);
  assert.equal(await run(), undefined);
  const shown = fake.messages.at(-1)!;
  assert.equal(shown.severity, 'error');
  assert.equal(
    shown.message,
    'ExecVerify: Cannot record from here: recording from a live session needs Python 3.12+ (sys.monitoring); on Python 3.11 there is one settrace slot and the debugger owns it',
  );
  assert.equal(fake.debugStarts.length, 0);
  assert.ok(!existsSync(path.join(ext, 'globalStorage', 'recorded-total-run-7.json.tmp')));
});

test("the notification's Cancel cancels the request: nothing shown, nothing replayed", async () => {
  const engine = new FakeEngineClient();
  engine.on('execverify/recordFromHere', () => {
    fake.progress[0]!.cancel();
    assert.equal(engine.tokens.at(-1)?.isCancellationRequested, true, 'the request carries the notification’s token');
    throw new EngineRequestError('cancelled', 'Cancelled.');
  });
  const { tracker } = activate(engine);
  tracker.onDidSendMessage(stopped);
  const shown = fake.messages.length;
  assert.equal(await run(), undefined);
  assert.equal(fake.messages.length, shown, 'a cancel is silent');
  assert.equal(fake.debugStarts.length, 0);
});
