// The ExecVerify commands against a fake `vscode` and a scripted engine:
// picking an input, trust gating, the predict / verify flows, and failures
// shown with the action that fixes them.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { registerCommands } from '../../src/extension/commands';
import type { PanelHost } from '../../src/extension/panel';
import type { StatusBarView } from '../../src/extension/statusbar';
import { createTrustGate } from '../../src/extension/trust';
import type { Prediction, TraceResult, Verification } from '../../src/server/protocol';
import { EventEmitter, fake, makeContext, makeDocument, makeEditor, resetFake, Uri } from '../support/fake-vscode';
import { FakeEngineClient, tick } from './extension-fakes';

const FILE = '/ws/stats.py';
const URI = Uri.file(FILE).toString();
const run: TraceResult = {
  runId: 'run-7',
  uri: URI,
  entry: 'mean([1, 2, 3])',
  steps: 12,
  outcome: 'returned 2.0',
  outcomeKind: 'returned',
  pythonVersion: '3.12.3',
};
const verification: Verification = {
  id: 'ver-1',
  runId: 'run-7',
  uri: URI,
  template: 'execverify',
  questions: [{ kind: 'output', line: 0, label: 'output', predicted: '2.0', actual: '2.0', ok: true }],
  rewards: { rIO: 1, rWhite: 0.8, r: 1.8, alpha: 0.5, gated: true },
  answerer: { kind: 'model', name: 'qwen-exec' },
  usage: { latencyMs: 100 },
  problems: [],
};
const prediction: Prediction = {
  id: 'pred-1',
  runId: 'run-7',
  uri: URI,
  step: 3,
  line: 4,
  nextLine: 5,
  values: { total: { value: '1', type: 'int' } },
  answerer: { kind: 'model', name: 'qwen-exec' },
  usage: { latencyMs: 50 },
  problems: [],
};

interface Setup {
  engine: FakeEngineClient;
  shownRuns: string[];
  rewards: Verification[];
  stop: { runId: string; step: number } | undefined;
}

function setup(): Setup {
  const engine = new FakeEngineClient();
  const s: Setup = { engine, shownRuns: [], rewards: [], stop: undefined };
  const panel: PanelHost = {
    show: async (id) => void s.shownRuns.push(id),
    refresh: async () => {},
    selectStep: () => {},
    currentRunId: () => s.shownRuns.at(-1),
    onDidSelectStep: new EventEmitter<{ runId: string; step: number }>().event as PanelHost['onDidSelectStep'],
    lastData: () => undefined,
  };
  const status: StatusBarView = { refresh: async () => undefined, showRewards: (v) => void s.rewards.push(v), text: () => '' };
  const replay = { current: () => (s.stop ? { sessionId: 's1', uri: URI, line: 4, ...s.stop } : undefined) };
  registerCommands(makeContext(), { client: engine, trust: createTrustGate(), panel, status, replay, log: (l) => fake.outputLines.push(l) });
  return s;
}

const run_ = (id: string, ...args: unknown[]) => fake.commands.get(id)!(...args);

beforeEach(() => resetFake());

test('Trace… offers the last run and calls found in tests, then starts a replay session that stops on entry', async () => {
  const s = setup();
  s.engine.on('execverify/inputs', () => [
    { entry: 'mean([4, 5])', source: 'lastRun', detail: 'last run' },
    { entry: 'mean([1, 2, 3])', source: 'test', detail: 'tests/test_stats.py:7' },
  ]);
  fake.quickPickAnswers.push((items) => items.find((i: { entry?: string }) => i.entry === 'mean([1, 2, 3])'));
  const started = await run_('execverify.trace', URI, 'mean');
  assert.equal(started, true);
  assert.deepEqual(s.engine.requests[0], { method: 'execverify/inputs', params: { uri: URI, function: 'mean' } });
  assert.equal(fake.quickPicks[0]![0].label, '$(edit) Enter a call…');
  assert.match(fake.quickPicks[0]![2].description, /tests\/test_stats.py:7/);
  assert.equal(fake.debugStarts.length, 1);
  assert.deepEqual(fake.debugStarts[0]!.config, {
    type: 'execverify',
    request: 'launch',
    name: 'ExecVerify: mean([1, 2, 3])',
    program: FILE,
    entry: 'mean([1, 2, 3])',
    stopOnEntry: true,
  });
});

test('with no candidates Trace… asks for a call in an input box that rejects non-calls', async () => {
  const s = setup();
  s.engine.on('execverify/inputs', () => []);
  fake.inputAnswers.push('mean([2, 4])');
  await run_('execverify.trace', URI, 'mean');
  const box = fake.inputBoxes[0];
  assert.equal(box.value, 'mean()');
  assert.equal(box.validateInput('mean([2, 4])'), undefined);
  assert.match(box.validateInput('import os'), /Enter a call such as mean\(1, 2\)/);
  assert.equal(fake.debugStarts[0]!.config.entry, 'mean([2, 4])');
});

test('dismissing the input picker starts nothing', async () => {
  const s = setup();
  s.engine.on('execverify/inputs', () => []);
  fake.inputAnswers.push(undefined);
  await run_('execverify.trace', URI, 'mean');
  assert.equal(fake.debugStarts.length, 0);
});

test('from the palette, Trace… uses the top-level function around the cursor', async () => {
  const s = setup();
  s.engine.on('execverify/inputs', () => []);
  const doc = makeDocument(FILE, 'import math\n\ndef mean(xs):\n    total = 0\n    return total\n\ndef other():\n    pass\n');
  fake.activeTextEditor = makeEditor(doc, 3);
  fake.inputAnswers.push('mean([1])');
  await run_('execverify.trace');
  assert.deepEqual(s.engine.requests[0]!.params, { uri: doc.uri.toString(), function: 'mean' });
});

test('in an untrusted workspace Trace… and Verify run nothing and say how to trust', async () => {
  const s = setup();
  fake.trusted = false;
  fake.messageAnswers.push('Manage Workspace Trust');
  await run_('execverify.trace', URI, 'mean');
  await run_('execverify.verifyCall', URI, 'mean');
  assert.equal(fake.debugStarts.length, 0);
  assert.deepEqual(s.engine.requests, []);
  assert.equal(fake.messages.length, 2);
  assert.match(fake.messages[0]!.message, /not trusted/);
  assert.deepEqual(fake.messages[0]!.items, ['Manage Workspace Trust']);
  assert.ok(fake.executed.some((e) => e.command === 'workbench.trust.manage'));
});

test('in an untrusted workspace Predict next step and Show verdict now ask nothing and say why', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 3 };
  s.engine.on('execverify/predict', () => prediction).on('execverify/reveal', () => ({}));
  fake.trusted = false;
  await run_('execverify.predictNextStep');
  await run_('execverify.revealVerdict', 'pred-1');
  assert.deepEqual(s.engine.requests, [], 'no request reached the engine');
  assert.equal(fake.messages.length, 2);
  assert.match(
    fake.messages[0]!.message,
    /cannot predict the next step: it sends the run to your model endpoint and runs the Python judge, and this workspace is not trusted/,
  );
  assert.match(fake.messages[1]!.message, /cannot judge the prediction: it runs the Python judge/);
  assert.deepEqual(fake.messages[1]!.items, ['Manage Workspace Trust']);
});

test('the server refusing an untrusted request offers Manage Workspace Trust', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 3 };
  s.engine.fail('execverify/predict', 'untrusted', 'This workspace is not trusted, so ExecVerify does not predict the next step.');
  fake.messageAnswers.push('Manage Workspace Trust');
  await run_('execverify.predictNextStep');
  assert.match(fake.messages[0]!.message, /not trusted/);
  assert.ok(fake.executed.some((e) => e.command === 'workbench.trust.manage'));
});

test('Verify whole call traces, verifies, shows the rewards and opens the panel on the run', async () => {
  const s = setup();
  s.engine.on('execverify/trace', () => run).on('execverify/verify', () => verification);
  const result = await run_('execverify.verifyCall', URI, 'mean', 'mean([1, 2, 3])');
  assert.deepEqual(result, verification);
  assert.deepEqual(s.engine.methods(), ['execverify/trace', 'execverify/verify']);
  assert.deepEqual(s.engine.requests[0]!.params, { uri: URI, entry: 'mean([1, 2, 3])' });
  assert.deepEqual(s.engine.requests[1]!.params, { runId: 'run-7' });
  assert.deepEqual(s.rewards, [verification]);
  assert.deepEqual(s.shownRuns, ['run-7']);
});

test('a garbage model answer is reported as problems, not as a failure', async () => {
  const s = setup();
  s.engine.on('execverify/trace', () => run).on('execverify/verify', () => ({ ...verification, problems: ['expected 6 answers, got 0'] }));
  await run_('execverify.verifyCall', URI, 'mean', 'mean([1])');
  assert.match(fake.messages[0]!.message, /problems \(scored as wrong\): expected 6 answers, got 0/);
  assert.equal(s.rewards.length, 1);
});

test('Predict next step without a stopped replay session says how to start one', async () => {
  const s = setup();
  await run_('execverify.predictNextStep');
  assert.deepEqual(s.engine.requests, []);
  assert.match(fake.messages[0]!.message, /start a replay session first/);
});

test('Predict next step asks at the stop of the active session, then Show verdict reveals that prediction', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 3 };
  s.engine
    .on('execverify/predict', () => prediction)
    .on('execverify/reveal', (p) => ({
      predictionId: (p as { predictionId: string }).predictionId,
      runId: 'run-7',
      step: 3,
      line: 4,
      actualNextLine: 5,
      actualValues: { total: { value: '1', type: 'int' } },
      questions: [],
      ok: true,
    }));
  // values is a null-prototype names map (see namesRecord): compare its content.
  assert.deepEqual(structuredClone(await run_('execverify.predictNextStep')), prediction);
  assert.deepEqual(s.engine.requests[0]!.params, { runId: 'run-7', step: 3 });
  await run_('execverify.revealVerdict');
  assert.deepEqual(s.engine.requests[1], { method: 'execverify/reveal', params: { predictionId: 'pred-1' } });
});

test('the CodeLens arguments (run, step) take precedence over the current stop', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 3 };
  s.engine.on('execverify/predict', () => ({ ...prediction, step: 9 }));
  await run_('execverify.predictNextStep', 'run-7', 9);
  assert.deepEqual(s.engine.requests[0]!.params, { runId: 'run-7', step: 9 });
});

test('no Python: the error offers to set the interpreter, and the choice opens that setting', async () => {
  const s = setup();
  s.engine.fail('execverify/trace', 'no_python', 'No Python 3.8+ interpreter found. Install Python or set execverify.pythonPath.');
  fake.messageAnswers.push('Set Python Path');
  assert.equal(await run_('execverify.verifyCall', URI, 'mean', 'mean([1])'), undefined);
  assert.equal(fake.messages[0]!.severity, 'error');
  assert.deepEqual(fake.messages[0]!.items, ['Set Python Path']);
  assert.deepEqual(fake.executed.at(-1), { command: 'workbench.action.openSettings', args: ['execverify.pythonPath'] });
});

test('endpoint down: a warning with settings and API key actions', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 0 };
  s.engine.fail('execverify/predict', 'endpoint_down', 'http://127.0.0.1:9/v1 did not answer (connection refused).');
  await run_('execverify.predictNextStep');
  assert.equal(fake.messages[0]!.severity, 'warning');
  assert.match(fake.messages[0]!.message, /connection refused/);
  assert.deepEqual(fake.messages[0]!.items, ['Open Settings', 'Set API Key']);
});

test('a file that does not parse is reported as a plain error message', async () => {
  const s = setup();
  s.engine.fail('execverify/trace', 'syntax_error', 'stats.py does not parse: invalid syntax (line 14). Fix the file and trace again.');
  await run_('execverify.verifyCall', URI, 'mean', 'mean([1])');
  assert.deepEqual(
    fake.messages.map((m) => [m.severity, m.message]),
    [['error', 'ExecVerify: stats.py does not parse: invalid syntax (line 14). Fix the file and trace again.']],
  );
});

test('a cancelled request shows nothing', async () => {
  const s = setup();
  s.engine.fail('execverify/trace', 'cancelled', 'Cancelled.');
  await run_('execverify.verifyCall', URI, 'mean', 'mean([1])');
  assert.deepEqual(fake.messages, []);
});

test('Add to dataset sends the run’s verification so the record carries the answers and rewards', async () => {
  const s = setup();
  s.engine
    .on('execverify/trace', () => run)
    .on('execverify/verify', () => verification)
    .on('execverify/addSample', () => ({ id: 'abcdef0123456789', added: true, store: '/ws/.execverify' }));
  await run_('execverify.verifyCall', URI, 'mean', 'mean([1])');
  await run_('execverify.addSample');
  assert.deepEqual(s.engine.requests.at(-1), { method: 'execverify/addSample', params: { verificationId: 'ver-1' } });
  assert.match(fake.messages.at(-1)!.message, /sample abcdef012345 added to \/ws\/.execverify/);
});

test('Export… asks for the format and the folder, then reports the files written', async () => {
  const s = setup();
  s.engine.on('execverify/export', (p) => ({ out: (p as { out: string }).out, records: 3, files: ['/ws/.execverify/export/verl/train.parquet'] }));
  fake.quickPickAnswers.push((items) => items.find((i: { label: string }) => i.label === 'verl'));
  fake.inputAnswers.push('.execverify/export/verl');
  await run_('execverify.export');
  assert.equal(fake.inputBoxes[0].value, '.execverify/export/verl');
  assert.deepEqual(s.engine.requests[0], { method: 'execverify/export', params: { format: 'verl', out: '.execverify/export/verl' } });
  assert.match(fake.messages[0]!.message, /exported 3 records to \/ws\/.execverify\/export\/verl\/train.parquet/);
});

test('a notice from the server with an action offers it as a button', async () => {
  const s = setup();
  fake.messageAnswers.push('Fix…');
  s.engine.emit('execverify/notice', {
    severity: 'info',
    message: 'No model endpoint is configured: the baseline answered.',
    action: 'execverify.openSettings',
  });
  await tick();
  await tick();
  assert.match(fake.messages[0]!.message, /baseline answered/);
  assert.ok(fake.executed.some((e) => e.command === 'execverify.openSettings'));
});

test('an unusable answer warns; a missing variable is only logged (it is drawn inline)', async () => {
  const s = setup();
  s.stop = { runId: 'run-7', step: 3 };
  s.engine.on('execverify/predict', () => ({ ...prediction, problems: ['No answer for xs.'] }));
  await run_('execverify.predictNextStep');
  assert.equal(fake.messages.length, 0);
  assert.ok(fake.outputLines.some((l) => l.includes('No answer for xs.')));
  s.engine.on('execverify/predict', () => ({
    ...prediction,
    nextLine: null,
    values: {},
    problems: ['The answer is not the JSON asked for (no JSON object found); every question counts as wrong.'],
  }));
  await run_('execverify.predictNextStep');
  assert.match(fake.messages[0]!.message, /could not be used: The answer is not the JSON asked for/);
});
