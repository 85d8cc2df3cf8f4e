// The Predict Result command against a fake `vscode` and a scripted engine:
// the lens's arguments or the test at the cursor reach the server, the result
// is summarised, and an untrusted workspace asks nothing.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { registerCommands } from '../../src/extension/commands';
import type { PanelHost } from '../../src/extension/panel';
import type { StatusBarView } from '../../src/extension/statusbar';
import { createTrustGate } from '../../src/extension/trust';
import type { TestPrediction } from '../../src/server/protocol';
import { EventEmitter, fake, makeContext, makeDocument, makeEditor, resetFake, Uri } from '../support/fake-vscode';
import { FakeEngineClient } from './extension-fakes';

const FILE = '/ws/test_stats.py';
const URI = Uri.file(FILE).toString();
const SOURCE = [
  'from stats import mean',
  '',
  'def test_a():',
  '    assert mean([1]) == 1',
  '',
  'def test_b():',
  '    x = [1, 3]',
  '    assert mean(x) == 3',
  '',
].join('\n');
const result: TestPrediction = {
  id: 'test-1',
  uri: URI,
  test: 'test_b',
  line: 6,
  entry: 'test_b()',
  answers: [
    { asked: 'passes(test_b)', predicted: 'True', actual: 'False', ok: false },
    { asked: 'mean(x)', predicted: '2.0', actual: null, ok: null },
  ],
  real: { status: 'failed', detail: 'AssertionError' },
  runId: 'run-3',
  answerer: { kind: 'model', name: 'qwen-exec' },
  usage: { latencyMs: 40 },
  problems: [],
};

function setup(): FakeEngineClient {
  const engine = new FakeEngineClient();
  const panel: PanelHost = {
    show: async () => {},
    refresh: async () => {},
    selectStep: () => {},
    currentRunId: () => undefined,
    onDidSelectStep: new EventEmitter<{ runId: string; step: number }>().event as PanelHost['onDidSelectStep'],
    lastData: () => undefined,
  };
  const status: StatusBarView = { refresh: async () => undefined, showRewards: () => {}, text: () => '' };
  registerCommands(makeContext(), {
    client: engine,
    trust: createTrustGate(),
    panel,
    status,
    replay: { current: () => undefined },
    log: (l) => fake.outputLines.push(l),
  });
  engine.on('execverify/predictTest', () => result);
  return engine;
}

const run_ = (id: string, ...args: unknown[]) => fake.commands.get(id)!(...args);

beforeEach(() => resetFake());

test('the lens arguments reach the server and the result is summarised: prediction, real result, verdicts', async () => {
  const engine = setup();
  const got = await run_('execverify.predictResult', URI, 'test_b', 6);
  assert.deepEqual(got, result);
  assert.deepEqual(engine.requests, [{ method: 'execverify/predictTest', params: { uri: URI, name: 'test_b', line: 6 } }]);
  assert.equal(fake.messages[0]!.message, 'ExecVerify test_b: predicted passes ✗; really AssertionError; mean(x) → predicted 2.0, real not recorded');
});

test('from the palette: the test the cursor is in', async () => {
  const engine = setup();
  fake.activeTextEditor = makeEditor(makeDocument(FILE, SOURCE), 7);
  await run_('execverify.predictResult');
  assert.deepEqual(engine.requests[0]?.params, { uri: URI, name: 'test_b', line: 6 });
});

test('outside a test: a message, no request', async () => {
  const engine = setup();
  fake.activeTextEditor = makeEditor(makeDocument(FILE, SOURCE), 0);
  await run_('execverify.predictResult');
  // The blank line after test_a is not in it either.
  fake.activeTextEditor = makeEditor(makeDocument(FILE, SOURCE), 4);
  await run_('execverify.predictResult');
  assert.deepEqual(engine.requests, []);
  assert.equal(fake.messages.length, 2);
  assert.match(fake.messages[0]!.message, /put the cursor in a pytest or unittest test/);
});

test('an untrusted workspace asks nothing and says why', async () => {
  const engine = setup();
  fake.trusted = false;
  await run_('execverify.predictResult', URI, 'test_b', 6);
  assert.deepEqual(engine.requests, []);
  assert.match(fake.messages[0]!.message, /cannot predict and run this test: it sends the run to your model endpoint/);
});
