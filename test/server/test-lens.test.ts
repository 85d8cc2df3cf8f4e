// Predict Result through the real engine server: a real LSP client over stdio,
// the real tracer running the tests (pytest functions and classes, a unittest
// TestCase), the real judge, and the model played by the OpenAI-compatible
// test server on 127.0.0.1, right on some questions and wrong on others.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { CodeLens } from 'vscode-languageserver/node';
import { findTests, testContext } from '../../src/engine/simulate/test-functions';
import { standaloneCall, testRun } from '../../src/engine/simulate/test-predict';
import { TracerPool } from '../../src/engine/trace/runner';
import { TestPredictionSchema, type TestPrediction } from '../../src/server/protocol';
import { startOpenAIServer, type OpenAIServer, type Reply } from '../support/openai-server';
import { installedPythons } from '../support/pythons';
import { startServer, type ServerUnderTest } from './lsp-client';

const ws = mkdtempSync(path.join(tmpdir(), 'ev-test-lens-'));
writeFileSync(path.join(ws, 'calc.py'), ['def add(a, b):', '    return a + b', '', '', 'def mul(a, b):', '    return a * b', ''].join('\n'));
const file = path.join(ws, 'test_calc.py');
const source = [
  'import unittest', // 1
  'from calc import add, mul', // 2
  '', // 3
  '', // 4
  'def double(x):', // 5
  '    return x * 2', // 6
  '', // 7
  '', // 8
  'def test_add_passes():', // 9
  '    assert add(2, 3) == 5', // 10
  '', // 11
  '', // 12
  'def test_add_fails():', // 13
  '    assert add(2, 2) == 5, "two and two"', // 14
  '', // 15
  '', // 16
  'def test_double():', // 17
  '    assert double(4) == 8', // 18
  '', // 19
  '', // 20
  'class TestMath:', // 21
  '    def test_mul(self):', // 22
  '        assert mul(3, 4) == 12', // 23
  '', // 24
  '', // 25
  'class DoubleCase(unittest.TestCase):', // 26
  '    def setUp(self):', // 27
  '        self.base = 10', // 28
  '', // 29
  '    def test_base(self):', // 30
  '        self.assertEqual(double(self.base), 21)', // 31
  '', // 32
  '    def helper(self):', // 33
  '        pass', // 34
  '', // 35
  '', // 36
  'def not_a_test():', // 37
  '    pass', // 38
  '', // 39
  '', // 40
  'def test_with_fixture(tmp_path):', // 41
  '    pass', // 42
  '', // 43
  '', // 44
  'def test_hostile():', // 45
  '    assert double(1) == 2', // 46
  '', // 47
  '', // 48
  'def test_forever():', // 49
  '    while True:', // 50
  '        double(1)', // 51
  '', // 52
  '', // 53
  'def test_local_args():', // 54
  '    two = 2', // 55
  '    assert add(two, 1) == 3', // 56
  '', // 57
].join('\n');
writeFileSync(file, source);
const uri = pathToFileURL(file).href;

/** What the scripted model answers per asked expression (the last `assert … == ??` of the prompt). */
const answers: Record<string, string> = {
  'passes(test_add_passes)': 'True', // right
  'add(2, 3)': '5', // right (imported: not recorded, not judged)
  'passes(test_add_fails)': 'True', // wrong
  'add(2, 2)': '4',
  'passes(test_double)': 'True', // right
  'double(4)': '9', // wrong: the tracer records 8
  'passes(TestMath.test_mul)': 'True',
  'mul(3, 4)': '12',
  'passes(DoubleCase.test_base)': 'False', // right: 20 != 21
  'double(self.base)': '20', // right
};
const MARKER = path.join(ws, 'hostile-ran');

function reply(body: Record<string, unknown> | undefined): Reply {
  const prompt = JSON.stringify(body?.messages ?? '');
  // The question line (JSON-escaped newlines around it); the template's example answer is not one.
  const asked = /\\nassert ((?:(?!\\n).)+?) == \?\?\\n/.exec(prompt)?.[1] ?? '';
  if (asked === 'passes(test_hostile)') {
    // Code in the answer, a second answer block, and a flood of text: it is a literal to judge, never run.
    const flood = 'x'.repeat(20_000);
    return { text: `[ANSWER]\nassert passes(test_hostile) == __import__('os').system('touch ${MARKER}') or True\n[/ANSWER]\n${flood}` };
  }
  if (asked === 'double(1)') return { text: 'I refuse to answer in the format.\n\u0000\u001b[31m' };
  const answer = answers[asked];
  return { text: answer === undefined ? 'no idea' : `[ANSWER]\nassert ${asked} == ${answer}\n[/ANSWER]` };
}

let model: OpenAIServer;
let server: ServerUnderTest;
/** Lens titles seen by the client each time the server asked it to refresh its lenses. */
const refreshes: string[][] = [];

before(async () => {
  model = await startOpenAIServer({ models: ['m'], script: (r) => reply(r.body) });
  server = await startServer({ rootPath: ws, settings: { baseUrl: model.url, model: 'm', requestTimeoutMs: 20_000 } });
  server.connection.onRequest('workspace/codeLens/refresh', async () => {
    refreshes.push((await lenses()).map((l) => l.command?.title ?? ''));
    return null;
  });
  await server.open(file, source);
});
after(async () => {
  await server?.close();
  await model?.close();
});

const lenses = () => server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } }) as Promise<CodeLens[]>;
/** The Predict Result lenses on 0-based `line` (the function lenses Trace… and Verify whole call left out). */
const testTitles = async (line: number) =>
  (await lenses())
    .filter((l) => l.range.start.line === line)
    .map((l) => l.command!.title)
    .filter((t) => t !== 'Trace…' && t !== 'Verify whole call');
const predictTest = async (name: string, line: number): Promise<TestPrediction> =>
  TestPredictionSchema.parse(await server.connection.sendRequest('execverify/predictTest', { uri, name, line }));

test('a Predict result lens is above each pytest and unittest test, and above nothing else', async () => {
  const predict = (await lenses()).filter((l) => l.command?.command === 'execverify.predictResult');
  assert.deepEqual(
    predict.map((l) => [l.range.start.line + 1, ...(l.command!.arguments as unknown[]).slice(1)]),
    [
      [9, 'test_add_passes', 9],
      [13, 'test_add_fails', 13],
      [17, 'test_double', 17],
      [22, 'test_mul', 22],
      [30, 'test_base', 30],
      [45, 'test_hostile', 45],
      [49, 'test_forever', 49],
      [54, 'test_local_args', 54],
    ],
    'not on double, not_a_test, setUp, helper, nor a test that takes a fixture',
  );
  assert.ok(predict.every((l) => l.command!.title === 'Predict result'));
});

test('a passing pytest test: prediction, then the real result beside it, then the replay lens', async () => {
  refreshes.length = 0;
  const p = await predictTest('test_add_passes', 9);
  assert.equal(p.entry, 'test_add_passes()');
  assert.deepEqual(p.answerer.kind, 'model');
  assert.deepEqual(p.real, { status: 'passed', detail: 'passed' });
  assert.deepEqual(p.answers, [
    { asked: 'passes(test_add_passes)', predicted: 'True', actual: 'True', ok: true },
    // add lives in calc.py, which the tracer does not record: its arguments are literals, so the call ran on its own.
    { asked: 'add(2, 3)', predicted: '5', actual: '5', ok: true },
  ]);
  assert.ok(p.runId);
  // The code under test reached the prompt: calc.add's source from the sibling module.
  const prompt = JSON.stringify(model.requests.at(-1)?.body ?? '');
  assert.match(prompt, /# from calc\.py\\ndef add\(a, b\):\\n    return a \+ b/);
  // The prediction was shown before the run (a refresh with it and no real result), then the result.
  // The server waits for each refresh to be answered, and the client answers after reading the lenses: no race.
  assert.equal(refreshes.length, 2);
  assert.ok(refreshes[1]!.includes('Real: passed ✓, returned 5 ✓'));
  const first = refreshes[0]!.filter((t) => t.includes('Prediction') || t.startsWith('Real'));
  assert.deepEqual(first, ['Prediction: passes, add(2, 3) → 5']);
  assert.deepEqual(await testTitles(8), [
    'Predict result',
    'Prediction: passes, add(2, 3) → 5',
    'Real: passed ✓, returned 5 ✓',
    'Open trace in replay debugger',
  ]);
  const replay = (await lenses()).find((l) => l.command?.title === 'Open trace in replay debugger')!;
  assert.deepEqual(replay.command!.arguments, [uri, 'test_add_passes', 'test_add_passes()']);
});

test('a failing test: the wrong "passes" prediction is marked wrong, the assertion error is the real result', async () => {
  const p = await predictTest('test_add_fails', 13);
  assert.equal(p.real?.status, 'failed');
  assert.equal(p.real?.detail, 'AssertionError: two and two');
  assert.deepEqual(p.answers[0], { asked: 'passes(test_add_fails)', predicted: 'True', actual: 'False', ok: false });
  assert.deepEqual(await testTitles(12), [
    'Predict result',
    'Prediction: passes, add(2, 2) → 4',
    'Real: AssertionError: two and two ✗, returned 4 ✓',
    'Open trace in replay debugger',
  ]);
});

test('a same-file callee: its real return value is read from the trace and judges the predicted one', async () => {
  const p = await predictTest('test_double', 17);
  assert.deepEqual(p.answers, [
    { asked: 'passes(test_double)', predicted: 'True', actual: 'True', ok: true },
    { asked: 'double(4)', predicted: '9', actual: '8', ok: false },
  ]);
  assert.ok((await testTitles(16)).includes('Real: passed ✓, returned 8 ✗'));
});

test('a pytest class method and a unittest TestCase method (setUp runs) are run and judged', async () => {
  const m = await predictTest('test_mul', 22);
  assert.equal(m.entry, 'TestMath().test_mul()');
  assert.equal(m.real?.status, 'passed');
  assert.deepEqual(
    m.answers.map((a) => a.ok),
    [true, true],
  );
  assert.equal(m.answers[1]!.actual, '12');
  const u = await predictTest('test_base', 30);
  assert.equal(u.entry, 'DoubleCase("test_base").debug()');
  assert.equal(u.real?.status, 'failed');
  assert.match(u.real!.detail, /^AssertionError: 20 != 21/);
  assert.deepEqual(u.answers, [
    { asked: 'passes(DoubleCase.test_base)', predicted: 'False', actual: 'False', ok: true },
    { asked: 'double(self.base)', predicted: '20', actual: '20', ok: true },
  ]);
});

test('a hostile model answer is a literal judged wrong: nothing it says runs, the lens stays short', async () => {
  const p = await predictTest('test_hostile', 45);
  assert.equal(p.real?.status, 'passed');
  assert.equal(p.answers[0]!.ok, false);
  // A reply without the answer tags: whatever the parser reads from it is judged (wrong), never run.
  assert.equal(p.answers[1]!.asked, 'double(1)');
  assert.equal(p.answers[1]!.ok, false);
  assert.equal(existsSync(MARKER), false, 'the code in the answer never ran');
  const titles = await testTitles(44);
  assert.ok(titles.length === 4 && titles.every((t) => t.length < 200 && !t.includes('\n')), titles.join(' | '));
});

test('a test that hits a limit neither passes nor fails: the pass prediction is not judged, the limit is shown', async () => {
  const p = await predictTest('test_forever', 49);
  assert.equal(p.real?.status, 'error');
  assert.match(p.real!.detail, /^did not finish \(limit: /);
  assert.equal(p.answers[0]!.ok, null);
  assert.equal(p.answers[0]!.actual, null);
});

test('the scan: docstrings, nested functions, imports in parentheses and aliases', () => {
  const code = [
    'import unittest as ut',
    'from calc import (add,',
    '    mul as times)',
    '"""',
    'def test_in_docstring():',
    '"""',
    'def outer():',
    '    def test_nested():',
    '        pass',
    'class Helper:',
    '    def test_not_collected(self):',
    '        pass',
    'class Case(ut.TestCase):',
    '    def test_it(self):',
    '        self.assertEqual(times(2, 3), 6)',
    '',
  ].join('\n');
  const tests = findTests(code);
  assert.deepEqual(
    tests.map((t) => [t.name, t.style, t.entry]),
    [['test_it', 'unittest', 'Case("test_it").debug()']],
  );
  const ctx = testContext(code, tests[0]!, (m) => (m === 'calc' ? 'def mul(a, b):\n    return a * b\n' : undefined));
  assert.equal(ctx.call, 'times(2, 3)');
  assert.equal(ctx.callee, 'times');
  assert.equal(ctx.calleeTraced, false);
  assert.match(ctx.code, /^# from calc\.py\ndef mul\(a, b\):\n    return a \* b\n\n\nclass Case\(ut\.TestCase\):/);
});

test("an imported callee whose arguments name the test's locals: its value is not recorded, and not judged", async () => {
  const p = await predictTest('test_local_args', 54);
  assert.equal(p.real?.status, 'passed');
  assert.deepEqual(p.answers[1], { asked: 'add(two, 1)', predicted: 'no idea', actual: null, ok: null });
  assert.ok((await testTitles(53)).includes('Real: passed ✗, return value not recorded'));
});

test('a call stands alone when its arguments are literals only', () => {
  const ctx = (call: string) => ({ code: '', call, callee: 'f', calleeTraced: false });
  assert.equal(standaloneCall(ctx('f(2, "a.b", [1.5, None], {"k": (True,)}, x=-1e3)')), 'f(2, "a.b", [1.5, None], {"k": (True,)}, x=-1e3)');
  assert.equal(standaloneCall(ctx('f(xs)')), undefined);
  assert.equal(standaloneCall(ctx('f(math.pi)')), undefined);
  assert.equal(standaloneCall(ctx('f(g(1))')), undefined);
  assert.equal(standaloneCall({ ...ctx('f(1)'), calleeTraced: true }), undefined, 'a traced callee is read from the test run');
});

test('on every installed Python 3.8–3.13: a unittest method (setUp ran) and a pytest function run and read right, with the tested call value', async () => {
  const pythons = installedPythons();
  const tests = findTests(source);
  const unit = tests.find((t) => t.name === 'test_base')!;
  const fn = tests.find((t) => t.name === 'test_double')!;
  for (const python of pythons) {
    const pool = new TracerPool({ python, size: 1 });
    try {
      for (const [t, status, value] of [
        [unit, 'failed', '20'],
        [fn, 'passed', '8'],
      ] as const) {
        const trace = await pool.trace({ path: file, source, entry: { kind: 'call', expr: t.entry }, cwd: ws });
        const run = testRun(
          trace,
          t,
          testContext(source, t, () => undefined),
        );
        assert.equal(run.status, status, `${python} ${t.entry}: ${run.detail}`);
        assert.equal(run.callValue?.repr, value, `${python} ${t.entry}`);
      }
    } finally {
      await pool.close();
    }
  }
});

test('a test that is not there is a clear error', async () => {
  await assert.rejects(
    server.connection.sendRequest('execverify/predictTest', { uri, name: 'not_a_test', line: 37 }),
    (e: Error & { data?: { code?: string } }) => {
      assert.equal(e.data?.code, 'bad_params');
      assert.match(e.message, /No test not_a_test at line 37/);
      return true;
    },
  );
});

test('no endpoint: the baseline answers, labelled, and the real result still comes', async () => {
  const baseline = await startServer({ rootPath: ws, settings: {} });
  try {
    await baseline.open(file, source);
    const p = TestPredictionSchema.parse(await baseline.connection.sendRequest('execverify/predictTest', { uri, name: 'test_double', line: 17 }));
    assert.equal(p.answerer.kind, 'baseline');
    assert.equal(p.real?.status, 'passed');
    assert.equal(p.answers[1]!.actual, '8');
    const shown = (await baseline.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.ok(shown.some((l) => l.command?.title.startsWith('Prediction (baseline): ')));
  } finally {
    await baseline.close();
  }
});

test('an untrusted workspace refuses: no model request, no run', async () => {
  const before = model.requests.length;
  const untrusted = await startServer({
    rootPath: ws,
    initializationOptions: { trusted: false },
    settings: { baseUrl: model.url, model: 'm' },
  });
  try {
    await untrusted.open(file, source);
    await assert.rejects(
      untrusted.connection.sendRequest('execverify/predictTest', { uri, name: 'test_double', line: 17 }),
      (e: Error & { data?: { code?: string } }) => {
        assert.equal(e.data?.code, 'untrusted');
        return true;
      },
    );
    const shown = (await untrusted.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.ok(!shown.some((l) => l.command?.title === 'Open trace in replay debugger'));
  } finally {
    await untrusted.close();
  }
  assert.equal(model.requests.length, before, 'the endpoint received nothing');
});
