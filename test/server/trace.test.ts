// The engine server traces real programs with the real tracer: summaries,
// panel rows, the "Predict next step" lens at the debugger's stop, input
// candidates from the workspace's tests, and bad input shown well.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { PanelDataSchema, TraceResultSchema, type PanelData, type TraceResult } from '../../src/server/protocol';
import { TraceSchema } from '../../src/engine/trace/schema';
import { startServer, waitFor, type ServerUnderTest } from './lsp-client';

const ws = mkdtempSync(path.join(tmpdir(), 'ev-trace-'));
const file = path.join(ws, 'stats.py');
const source = [
  'def total_even(xs):',
  '    total = 0',
  '    for x in xs:',
  '        if x % 2 == 0:',
  '            total += x',
  '    return total',
  '',
  'def spin(n):',
  '    i = 0',
  '    while i < n:',
  '        i += 1',
  '    return i',
  '',
].join('\n');
writeFileSync(file, source);
mkdirSync(path.join(ws, 'tests'));
writeFileSync(
  path.join(ws, 'tests', 'test_stats.py'),
  'from stats import spin\n\ndef test_spin():\n    assert spin(3) == 3\n    assert stats.spin(\n        5,\n    ) == 5\n',
);
const uri = pathToFileURL(file).href;

let server: ServerUnderTest;
before(async () => {
  server = await startServer({ rootPath: ws, settings: { limits: { steps: 500 } }, workDoneProgress: true });
  await server.open(file, source);
});
after(async () => {
  await server.close();
});

const trace = async (entry: string, extra: Record<string, unknown> = {}): Promise<TraceResult> =>
  TraceResultSchema.parse(await server.connection.sendRequest('execverify/trace', { uri, entry, ...extra }));

interface Lens {
  range: { start: { line: number } };
  command: { title: string; command: string; arguments: unknown[] };
}

test('tracing a call returns a summary of the real run', async () => {
  const run = await trace('total_even([1, 2, 4])');
  assert.equal(run.outcome, 'returned 6');
  assert.equal(run.outcomeKind, 'returned');
  assert.equal(run.uri, uri);
  assert.ok(run.steps > 10);
  assert.match(run.pythonVersion, /^3\.\d+/);
});

test('without a client token, tracing reports server-initiated progress (begin, report, end)', async () => {
  server.notifications.length = 0;
  await trace('total_even([3])');
  const kinds = server.notifications.filter((n) => n.method === '$/progress').map((n) => (n.params as { value: { kind: string } }).value.kind);
  assert.deepEqual(kinds, ['begin', 'report', 'end']);
  const begin = server.notifications.find((n) => n.method === '$/progress')!.params as { value: { title: string; cancellable: boolean } };
  assert.match(begin.value.title, /tracing total_even\(\[3\]\)/);
  assert.equal(begin.value.cancellable, true);
});

test('the panel shows each line with what running it changed and the line that ran next', async () => {
  const run = await trace('total_even([1, 2, 4])');
  const data: PanelData = PanelDataSchema.parse(await server.connection.sendRequest('execverify/panel', { runId: run.runId }));
  assert.equal(data.rows.length, run.steps);
  const lines = data.rows.filter((r) => r.event === 'line');
  assert.deepEqual(lines[0], { ...lines[0], line: 2, text: 'total = 0', changes: ['total = 0'], nextLine: 3 });
  // `if x % 2 == 0` for x = 1 is false: the loop header runs next, not line 5.
  const firstIf = lines.find((r) => r.line === 4)!;
  assert.equal(firstIf.nextLine, 3);
  const ret = lines.find((r) => r.line === 6)!;
  assert.equal(ret.nextLine, -1);
  assert.equal(data.verification, null);
});

test('where the replay debugger stops, a "Predict next step" lens appears on that line, and goes when the session ends', async () => {
  const run = await trace('total_even([1, 2, 4])');
  await server.connection.sendNotification('execverify/stepChanged', { runId: run.runId, step: 3, uri, line: 4 });
  const got = (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  const predict = got.find((l) => l.command.title === 'Predict next step');
  assert.ok(predict, JSON.stringify(got.map((l) => l.command.title)));
  assert.equal(predict.range.start.line, 3);
  assert.deepEqual(predict.command.arguments, [run.runId, 3]);
  await server.connection.sendNotification('execverify/stepChanged', { runId: run.runId, step: 0, ended: true });
  const after = (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  assert.ok(!after.some((l) => l.command.title === 'Predict next step'));
});

test('input candidates: the last run first, then calls found in the workspace’s tests', async () => {
  await trace('spin(2)');
  const inputs = (await server.connection.sendRequest('execverify/inputs', { uri, function: 'spin' })) as { entry: string; source: string; detail: string }[];
  assert.deepEqual(inputs[0], { entry: 'spin(2)', source: 'lastRun', detail: 'last run' });
  const fromTests = inputs.filter((i) => i.source === 'test');
  assert.deepEqual(
    fromTests.map((i) => [i.entry, i.detail]),
    [
      ['spin(3)', path.join('tests', 'test_stats.py') + ':4'],
      ['spin(5,)', path.join('tests', 'test_stats.py') + ':5'],
    ],
  );
});

test('the trace comes back in the reply for the replay debugger', async () => {
  const run = await trace('total_even([2])', { wantTrace: true });
  assert.ok(run.trace);
  const t = TraceSchema.parse(run.trace);
  assert.equal(t.steps.length, run.steps);
});

test('a run that hits the step limit is kept, and the user is told how to record more', async () => {
  const run = await trace('spin(10000)');
  assert.equal(run.outcomeKind, 'limit');
  assert.match(run.outcome, /stopped by the steps limit/);
  const notice = await waitFor(() => server.notifications.find((n) => n.method === 'execverify/notice'), 'a notice');
  assert.match((notice.params as { message: string }).message, /Raise execverify.limits/);
});

test('a file that does not parse is a syntax_error naming the line, and the server keeps working', async () => {
  const bad = path.join(ws, 'broken.py');
  writeFileSync(bad, 'def f(x):\n    return (x +\n');
  await assert.rejects(
    server.connection.sendRequest('execverify/trace', { uri: pathToFileURL(bad).href, entry: 'f(1)' }),
    (e: Error & { data?: { code: string } }) => {
      assert.equal(e.data?.code, 'syntax_error');
      assert.match(e.message, /line 2|line 3/);
      return true;
    },
  );
  assert.equal((await trace('total_even([])')).outcome, 'returned 0');
});

test('an entry that raises is a run like any other, ending in the exception', async () => {
  const run = await trace('total_even(None)');
  assert.equal(run.outcomeKind, 'raised');
  assert.match(run.outcome, /TypeError/);
});

test('no Python interpreter: a no_python error that says which setting to fix', async () => {
  const other = await startServer({ rootPath: ws, settings: { pythonPath: path.join(ws, 'no-such-python') } });
  try {
    await other.open(file, source);
    await assert.rejects(other.connection.sendRequest('execverify/trace', { uri, entry: 'total_even([1])' }), (e: Error & { data?: { code: string } }) => {
      assert.equal(e.data?.code, 'no_python');
      assert.match(e.message, /pythonPath/);
      return true;
    });
  } finally {
    await other.close();
  }
});

test('a trace recorded elsewhere can be adopted; a non-trace is refused', async () => {
  const run = await trace('total_even([4])', { wantTrace: true });
  const recorded = run.trace!;
  const adopted = TraceResultSchema.parse(await server.connection.sendRequest('execverify/adopt', { uri, trace: recorded }));
  assert.notEqual(adopted.runId, run.runId);
  assert.equal(adopted.steps, run.steps);
  await assert.rejects(server.connection.sendRequest('execverify/adopt', { uri, trace: { schema: 'nope' } }), /Not an ExecVerify trace/);
});
