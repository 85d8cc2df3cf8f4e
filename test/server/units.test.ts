// The server's pure parts, without a connection: finding functions for
// CodeLens, finding calls in tests, settings parsing, the bounded run store,
// and the inline items and panel rows built from a real trace.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { TraceSchema } from '../../src/engine/trace/schema';
import { findFunctions } from '../../src/engine/python-functions';
import { findTestCalls } from '../../src/server/inputs';
import { PanelDataWireSchema, parseSettings } from '../../src/server/protocol';
import { describeOutcome } from '../../src/engine/trace/outcome';
import { RunStore, calledFunction } from '../../src/server/runs';
import { followers, inlineItems, panelData, panelRows } from '../../src/server/views';

const fixture = path.join(__dirname, '..', 'fixtures', 'editor');
const trace = TraceSchema.parse(JSON.parse(readFileSync(path.join(fixture, 'loop-trace.json'), 'utf8')));

test('functions: top-level, nested and async defs are found; defs inside docstrings are not', () => {
  const src = [
    'def a(x, y=1):',
    '    """',
    'def fake():',
    '    """',
    '    def inner(): pass',
    "    s = '''def also_fake(): '''",
    '    return x',
    '',
    'async def b():',
    '    pass',
    'class C:',
    '    def m(self):',
    '        pass',
    '# """ a quote in a comment does not open a string',
    'def c(',
    '    z,',
    '):',
    '    pass',
  ].join('\n');
  const fns = findFunctions(src);
  assert.deepEqual(
    fns.map((f) => [f.name, f.line, f.topLevel, f.async]),
    [
      ['a', 1, true, false],
      ['inner', 5, false, false],
      ['b', 9, true, true],
      ['m', 12, false, false],
      ['c', 15, true, false],
    ],
  );
  assert.equal(fns[0]!.params, 'x, y=1');
});

test('test calls: single-line and multi-line calls, qualified or not, deduplicated, never the def or the import', () => {
  const files = [
    {
      path: 'tests/test_a.py',
      text: 'from m import f\nimport m\n\ndef test_f():\n    assert f([1, 2]) == 3\n    assert m.f([1, 2]) == 3\n    x = f(\n        "a)b",  # a paren in a string\n        key=(1, 2),\n    )\n    assert g(f) is None\n    ff(9)\n',
    },
    { path: 'tests/test_b.py', text: 'def f(x):\n    return x\n' },
  ];
  assert.deepEqual(
    findTestCalls('f', files).map((c) => [c.entry, c.detail]),
    [
      ['f([1, 2])', 'tests/test_a.py:5'],
      ['f("a)b", key=(1, 2),)', 'tests/test_a.py:7'],
    ],
  );
});

test('settings: defaults for everything, and one bad value does not discard the good ones', () => {
  const s = parseSettings({ baseUrl: 'http://h/v1', alpha: 7, limits: { steps: 10 } });
  assert.equal(s.baseUrl, 'http://h/v1');
  assert.equal(s.alpha, 0.5);
  assert.equal(s.limits.steps, 10);
  assert.equal(s.limits.wallTimeMs, 10_000);
  assert.equal(parseSettings(undefined).datasetDir, '.execverify');
  assert.equal(parseSettings('garbage').template, 'execverify');
});

test('the run store is bounded: the oldest run and everything about it is dropped', () => {
  const store = new RunStore(2);
  const a = store.addRun({ uri: 'u', file: 'f', entry: 'f(1)', trace });
  store.addPrediction({
    prediction: {
      id: 'p',
      runId: a.id,
      uri: 'u',
      step: 1,
      line: 2,
      nextLine: 3,
      values: {},
      answerer: { kind: 'baseline', name: 'baseline' },
      usage: { latencyMs: 0 },
      problems: [],
    },
    result: { nextLine: 3, values: {}, answerer: { kind: 'baseline', name: 'baseline' }, usage: { latencyMs: 0 }, problems: [] },
    verdict: undefined,
  });
  store.addRun({ uri: 'u', file: 'f', entry: 'f(2)', trace });
  store.addRun({ uri: 'u', file: 'f', entry: 'f(3)', trace });
  assert.equal(store.run(a.id), undefined);
  assert.equal(store.prediction('p'), undefined);
  assert.equal(store.allRuns().length, 2);
});

test('history keeps the most recent entry first, without repeats', () => {
  const store = new RunStore();
  for (const e of ['f(1)', 'f(2)', 'f(1)']) store.remember('u', 'f', e);
  assert.deepEqual(store.entries('u', 'f'), ['f(1)', 'f(2)']);
  assert.equal(calledFunction('pkg.mod.f([1], 2)'), 'f');
  assert.equal(calledFunction('not a call'), undefined);
});

test('outcomes are described for people', () => {
  assert.equal(describeOutcome(trace), 'returned 6');
  assert.equal(
    describeOutcome({ ...trace, outcome: { kind: 'limit', limit: 'steps', message: 'more than 10 events' } }),
    `stopped by the steps limit after ${trace.steps.length} steps: more than 10 events`,
  );
  assert.equal(describeOutcome({ ...trace, outcome: { kind: 'raised', type: 'ValueError', message: 'bad', line: 4 } }), 'raised ValueError: bad (line 4)');
});

test('followers: after each line, the next line of the same frame (-1 at the return), per SEMANTICS §2', () => {
  // total_even([1, 2, 4]): 2 → 3 → 4 (x=1, false) → 3 → 4 (x=2) → 5 → 3 → 4 (x=4) → 5 → 3 → 6 → return
  const f = followers(trace);
  const pairs = trace.steps.flatMap((s, i) => (s.event === 'line' ? [[s.line, f.line[i]]] : []));
  assert.deepEqual(pairs, [
    [2, 3],
    [3, 4],
    [4, 3],
    [3, 4],
    [4, 5],
    [5, 3],
    [3, 4],
    [4, 5],
    [5, 3],
    [3, 6],
    [6, -1],
  ]);
});

test('panel rows carry, for each line, what running it changed', () => {
  const store = new RunStore();
  const run = store.addRun({ uri: 'u', file: 'f', entry: 'total_even([1, 2, 4])', trace });
  const rows = panelRows(run, store);
  const lines = rows.filter((r) => r.event === 'line');
  assert.deepEqual(lines[0]!.changes, ['total = 0']);
  assert.deepEqual(lines[1]!.changes, ['x = 1']);
  assert.equal(lines[0]!.text, 'total = 0');
  assert.deepEqual(rows.at(-1)!.changes.at(-1), '→ 6');
});

test('panel data of a huge run is capped, and says how much is left out', () => {
  const store = new RunStore();
  const run = store.addRun({ uri: 'u', file: 'f', entry: 'total_even([1, 2, 4])', trace });
  assert.equal(panelRows(run, store, 5).length, 5);
  const data = panelData(run, store);
  assert.equal(data.omittedRows, 0);
  assert.equal(data.rows.length, trace.steps.length);
});

test('inline items: a pending prediction shows a marker and values; its verdict replaces them', () => {
  const store = new RunStore();
  const run = store.addRun({ uri: 'u', file: 'f', entry: 'total_even([1, 2, 4])', trace });
  const answerer = { kind: 'model' as const, name: 'm @ http://h/v1' };
  const record = {
    prediction: {
      id: 'p1',
      runId: run.id,
      uri: 'u',
      step: 1,
      line: 2,
      nextLine: 3,
      values: { total: { value: '0', type: 'int' } },
      answerer,
      usage: { latencyMs: 1 },
      problems: [],
    },
    result: { nextLine: 3, values: {}, answerer, usage: { latencyMs: 1 }, problems: [] },
    verdict: undefined as undefined | Parameters<RunStore['addPrediction']>[0]['verdict'],
  };
  store.addPrediction(record);
  assert.deepEqual(
    inlineItems(store, 'u').map((i) => [i.line, i.kind, i.text]),
    [
      [2, 'predictedValue', 'm @ http://h/v1 predicts: total = 0'],
      [3, 'predictedNext', '◀ m @ http://h/v1: runs next'],
    ],
  );
  record.verdict = {
    predictionId: 'p1',
    runId: run.id,
    step: 1,
    line: 2,
    actualNextLine: 3,
    actualValues: { total: { value: '0', type: 'int' }, xs: { value: '[1, 2, 4]', type: 'list' } },
    ok: false,
    questions: [
      { kind: 'next_line', line: 2, label: 'next line after 2', predicted: '3', actual: '3', ok: true },
      { kind: 'state', line: 2, label: 'total after 2', var: 'total', predicted: '1; int', actual: '0; int', ok: false },
      { kind: 'state', line: 2, label: 'xs after 2', var: 'xs', predicted: '(no answer)', actual: '[1, 2, 4]; list', ok: false },
    ],
  };
  record.prediction.values = { total: { value: '1', type: 'int' } };
  assert.deepEqual(
    inlineItems(store, 'u').map((i) => [i.line, i.kind, i.ok, i.text]),
    [[2, 'verdict', false, '✓ next line 3  ✗ total = 0 (predicted 1)  ✗ xs = [1, 2, 4] (no answer)']],
  );
  record.prediction.values = { total: { value: '0', type: 'str' } };
  assert.match(inlineItems(store, 'u')[0]!.text, /✗ total = 0: int \(predicted 0: str\)/);
  store.stop = { runId: 'run-other', step: 0, uri: 'u', line: 1 };
  assert.deepEqual(inlineItems(store, 'u'), [], 'a prediction about another run is not drawn while the debugger is in a new one');
});

test('the fast panel check accepts what the server sends and rejects malformed rows', () => {
  const store = new RunStore();
  const run = store.addRun({ uri: 'u', file: 'f', entry: 'total_even([1, 2, 4])', trace });
  const data = panelData(run, store);
  assert.equal(PanelDataWireSchema.parse(JSON.parse(JSON.stringify(data))).rows.length, trace.steps.length);
  const bad = JSON.parse(JSON.stringify(data));
  bad.rows[3].changes = [1];
  assert.equal(PanelDataWireSchema.safeParse(bad).success, false);
  const badPrediction = JSON.parse(JSON.stringify(data));
  badPrediction.rows[1].prediction = { nextLine: 'three' };
  assert.equal(PanelDataWireSchema.safeParse(badPrediction).success, false);
});
