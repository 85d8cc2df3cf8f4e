// The trace-vs-prediction panel's logic (media/panel-model.js) without VS Code:
// rows from data, HTML escaping, the virtual window, keys and messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PanelData } from '../../src/server/protocol';

// media/ is plain JavaScript loaded by the webview as a script; Node loads the same file.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const M = require('../../media/panel-model.js');

function data(overrides: Partial<PanelData> = {}): PanelData {
  return {
    run: { runId: 'run-1', uri: 'file:///w/m.py', entry: 'f(3)', steps: 4, outcome: 'returned 6', outcomeKind: 'returned', pythonVersion: '3.12.1' },
    rows: [
      { step: 0, event: 'call', fn: 'f', depth: 0, line: 1, text: 'def f(n):', changes: ['n = 3'], nextLine: null },
      {
        step: 1,
        event: 'line',
        fn: 'f',
        depth: 0,
        line: 2,
        text: 'x = n * 2',
        changes: [],
        nextLine: 3,
        prediction: { nextLine: 3, values: { x: { value: '6', type: 'int' } }, answerer: 'tiny-model', latencyMs: 41.6 },
        verdict: {
          ok: true,
          questions: [{ kind: 'next_line', line: 2, label: 'next line after 2', predicted: '3', actual: '3', ok: true }],
          actualValues: { x: { value: '6', type: 'int' } },
        },
      },
      {
        step: 2,
        event: 'line',
        fn: 'f',
        depth: 0,
        line: 3,
        text: 'return x',
        changes: ['x = 6'],
        nextLine: -1,
        prediction: { nextLine: 4, values: { x: { value: '7', type: 'int' } }, answerer: 'tiny-model', latencyMs: 12 },
        verdict: {
          ok: false,
          questions: [
            { kind: 'next_line', line: 3, label: 'next line after 3', predicted: '4', actual: '-1', ok: false },
            { kind: 'state', line: 3, label: 'x after 3', predicted: '7', actual: '6', ok: false },
          ],
          actualValues: { x: { value: '6', type: 'int' } },
        },
      },
      { step: 3, event: 'return', fn: 'f', depth: 0, line: 3, text: 'return x', changes: ['→ 6'], nextLine: null },
    ],
    omittedRows: 0,
    verification: null,
    ...overrides,
  };
}

test('rows show the real next line and changes beside the prediction, with the verdict as status', () => {
  const rows = M.buildRows(data());
  assert.equal(rows.length, 4);
  assert.equal(rows[0].status, 'none');
  assert.equal(rows[1].status, 'ok');
  assert.match(rows[1].real, /^next 3/);
  assert.match(rows[1].predicted, /next 3 · x = 6 \(tiny-model, 42 ms\)/);
  assert.equal(rows[2].status, 'bad');
  assert.equal(rows[2].real, 'next return · x = 6');
  assert.deepEqual(rows[2].mismatches, ['next', 'x after 3']);
});

test('a prediction without a verdict is pending', () => {
  const d = data();
  delete d.rows[2]!.verdict;
  assert.equal(M.buildRows(d)[2].status, 'pending');
});

test('rendered rows escape trace text, so a value cannot inject markup', () => {
  const d = data();
  d.rows[1]!.text = 's = "<img src=x onerror=alert(1)>"';
  const html = M.renderRow(M.buildRows(d)[1], true);
  assert.ok(!html.includes('<img'));
  assert.ok(html.includes('&lt;img'));
  assert.match(html, /class="row status-ok selected"/);
  assert.match(html, /aria-selected="true"/);
  assert.ok(!html.includes('style='), 'no inline styles: the CSP forbids them');
});

test('mismatched rows are marked and name what was wrong', () => {
  const html = M.renderRow(M.buildRows(data())[2], false);
  assert.match(html, /mismatch/);
  assert.match(html, /✗ next, x after 3/);
});

test('the summary shows the rewards, the model, latency, tokens and each question verdict', () => {
  const d = data({
    verification: {
      id: 'ver-1',
      runId: 'run-1',
      uri: 'file:///w/m.py',
      template: 'execverify',
      questions: [
        { kind: 'output', line: 0, label: 'output', predicted: '6', actual: '6', ok: true },
        { kind: 'state', line: 2, label: 'x after 2', predicted: '5', actual: '6', ok: false },
      ],
      rewards: { rIO: 1, rWhite: 0.5, r: 1.5, alpha: 0.5, gated: true },
      answerer: { kind: 'model', name: 'qwen-exec' },
      usage: { latencyMs: 812.4, promptTokens: 420, completionTokens: 37 },
      problems: [],
    },
  });
  const html = M.renderSummary(d);
  assert.match(html, /R_IO <b>1<\/b>/);
  assert.match(html, /R_white <b>0.5<\/b>/);
  assert.match(html, /R <b>1.5<\/b>/);
  assert.match(html, /qwen-exec · 812 ms · 420 \+ 37 tokens/);
  assert.match(html, /<tr class="bad"><td>✗<\/td><td>x after 2<\/td><td>5<\/td><td>6<\/td>/);
});

test('a baseline verification is labelled as the baseline, never as a model', () => {
  const d = data({
    verification: {
      id: 'ver-2',
      runId: 'run-1',
      uri: 'u',
      template: 'execverify',
      questions: [],
      rewards: { rIO: 0, rWhite: 0, r: 0, alpha: 0.5, gated: true },
      answerer: { kind: 'baseline', name: 'baseline' },
      usage: { latencyMs: 0 },
      problems: [],
    },
  });
  assert.match(M.renderSummary(d), /baseline \(no model\)/);
});

test('a huge run says how many steps the panel leaves out', () => {
  assert.match(M.renderSummary(data({ omittedRows: 50_000 })), /Showing the first 4 steps; 50000 more are in the run/);
  assert.ok(!M.renderSummary(data()).includes('Showing the first'));
});

test('the virtual window of a 10,000-row list holds only the rows in view plus overscan', () => {
  const w = M.virtualWindow({ scrollTop: 22 * 5000, viewportHeight: 440, rowHeight: 22, total: 10_000, overscan: 10 });
  assert.equal(w.start, 4990);
  assert.equal(w.end, 5031);
  assert.equal(w.offsetTop, 4990 * 22);
  assert.equal(w.totalHeight, 220_000);
  const end = M.virtualWindow({ scrollTop: 10_000_000, viewportHeight: 440, rowHeight: 22, total: 10_000 });
  assert.equal(end.end, 10_000);
  assert.ok(end.start <= end.end);
  const none = M.virtualWindow({ scrollTop: 0, viewportHeight: 440, rowHeight: 22, total: 0 });
  assert.deepEqual([none.start, none.end], [0, 0]);
});

test('scrolling to show a row moves only as far as needed', () => {
  assert.equal(M.scrollToShow(10, 0, 440, 22), 0);
  assert.equal(M.scrollToShow(30, 0, 440, 22), 31 * 22 - 440);
  assert.equal(M.scrollToShow(2, 200, 440, 22), 44);
});

test('a data message selects the first row of a new run and keeps the selection on an update of the same run', () => {
  let s = M.applyMessage(M.initialState(), { type: 'data', data: data() });
  assert.equal(s.selected, 0);
  s = M.applyMessage(s, { type: 'selectStep', step: 2 });
  assert.equal(s.selected, 2);
  s = M.applyMessage(s, { type: 'data', data: data() });
  assert.equal(s.selected, 2);
  const other = data();
  other.run.runId = 'run-2';
  assert.equal(M.applyMessage(s, { type: 'data', data: other }).selected, 0);
});

test('malformed messages leave the state unchanged', () => {
  const s = M.applyMessage(M.initialState(), { type: 'data', data: data() });
  for (const bad of [
    null,
    'x',
    42,
    { type: 'data' },
    { type: 'data', data: { rows: 'no' } },
    { type: 'selectStep', step: 'two' },
    { type: 'selectStep', step: 99 },
    { type: 'unknown' },
  ]) {
    assert.equal(M.applyMessage(s, bad), s);
  }
});

test('keys move the selection and tell the debugger; n jumps to the next mismatch', () => {
  let s = M.applyMessage(M.initialState(), { type: 'data', data: data() });
  let r = M.handleKey(s, 'ArrowDown', 20);
  assert.equal(r.state.selected, 1);
  assert.deepEqual(r.post, { type: 'selectStep', step: 1 });
  s = r.state;
  r = M.handleKey(s, 'n', 20);
  assert.equal(r.state.selected, 2);
  r = M.handleKey(r.state, 'End', 20);
  assert.equal(r.state.selected, 3);
  r = M.handleKey(r.state, 'End', 20);
  assert.equal(r.post, null, 'no message when the selection does not move');
  r = M.handleKey(r.state, 'Home', 20);
  assert.equal(r.state.selected, 0);
  assert.deepEqual(M.handleKey(r.state, 'Enter', 20).post, { type: 'selectStep', step: 0 });
  const ignored = M.handleKey(r.state, 'x', 20);
  assert.equal(ignored.state, r.state);
  assert.equal(ignored.post, null);
});

test('what survives a reload is small: the run id, the selection and the scroll position', () => {
  const s = M.applyMessage(M.applyMessage(M.initialState(), { type: 'data', data: data() }), { type: 'selectStep', step: 3 });
  assert.deepEqual(M.persistable(s), { runId: 'run-1', selected: 3, scrollTop: 0 });
});

test('a row shows the source line, indented by call depth, with the function as its title', () => {
  const d = data();
  d.rows[1]!.depth = 2;
  d.rows[1]!.fn = 'outer.<locals>.inner';
  const html = M.renderRow(M.buildRows(d)[1], false);
  assert.match(html, /<span class="code" title="outer.&lt;locals&gt;.inner">    x = n \* 2<\/span>/);
});
