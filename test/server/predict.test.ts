// "Predict next step" and "Verify whole call" through the real engine server:
// a real LSP client over stdio, the real tracer and judge, and the model played
// by the OpenAI-compatible test server on 127.0.0.1. Also cancellation,
// progress, the baseline, an endpoint that is down, and garbage answers.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import { WorkDoneProgress } from 'vscode-languageserver/node';
import {
  InlineResultsSchema,
  PanelDataSchema,
  PredictionSchema,
  StepVerdictSchema,
  TraceResultSchema,
  VerificationSchema,
  type InlineItem,
  type PanelData,
} from '../../src/server/protocol';
import { startOpenAIServer, type OpenAIServer, type Reply } from '../support/openai-server';
import { startServer, waitFor, type ServerUnderTest } from './lsp-client';

const ws = mkdtempSync(path.join(tmpdir(), 'ev-predict-'));
const file = path.join(ws, 'evens.py');
const source = ['def total_even(xs):', '    total = 0', '    for x in xs:', '        if x % 2 == 0:', '            total += x', '    return total', ''].join(
  '\n',
);
writeFileSync(file, source);
const uri = pathToFileURL(file).href;

let model: OpenAIServer;
let server: ServerUnderTest;
/** What the client answers to workspace/configuration; a test changes it and sends didChangeConfiguration. */
const settings: Record<string, unknown> = {};
let reply: (body: Record<string, unknown> | undefined) => Reply = () => ({ text: 'ok' });

before(async () => {
  model = await startOpenAIServer({ models: ['exec-model'], script: (r) => reply(r.body) });
  server = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications' },
    settings: Object.assign(settings, { baseUrl: model.url, model: 'exec-model', requestTimeoutMs: 20_000 }),
  });
  await server.open(file, source);
});
after(async () => {
  await server.close();
  await model.close();
});
beforeEach(() => {
  server.notifications.length = 0;
});

const request = <T>(method: string, params: unknown, token?: CancellationTokenSource) =>
  (token ? server.connection.sendRequest(method, params, token.token) : server.connection.sendRequest(method, params)) as Promise<T>;

async function traced(entry = 'total_even([1, 2, 4])'): Promise<{ runId: string; rows: PanelData['rows'] }> {
  const run = TraceResultSchema.parse(await request('execverify/trace', { uri, entry }));
  const data = PanelDataSchema.parse(await request('execverify/panel', { runId: run.runId }));
  return { runId: run.runId, rows: data.rows };
}

/** The step of the k-th `line` event of `line`. */
const stepOf = (rows: PanelData['rows'], line: number, k = 1) => rows.filter((r) => r.event === 'line' && r.line === line)[k - 1]!.step;

/** A scripted model: answers the next-step prompt with `next` and, for each variable the prompt asks about, `values[name]`. */
function nextStepModel(next: number, values: Record<string, [string, string]>) {
  return (body: Record<string, unknown> | undefined): Reply => {
    const prompt = JSON.stringify(body?.messages ?? '');
    const asked = [...prompt.matchAll(/- (\w+): value and type/g)].map((m) => m[1]!);
    const variables = asked.filter((n) => values[n]).map((name) => ({ name, value: values[name]![0], type: values[name]![1] }));
    return { text: JSON.stringify({ next_line: next, variables }), usage: { prompt_tokens: 120, completion_tokens: 20 } };
  };
}

const lastInline = (): InlineItem[] => {
  const n = [...server.notifications].reverse().find((x) => x.method === 'execverify/inline');
  return n ? InlineResultsSchema.parse(n.params).items : [];
};

test('a right prediction shows at once (marker on the predicted line, values beside the current one), then ✓ on request', async () => {
  const { runId, rows } = await traced();
  const step = stepOf(rows, 2); // `total = 0`, about to run
  reply = nextStepModel(3, { total: ['0', 'int'], xs: ['[1, 2, 4]', 'list'] });
  const p = PredictionSchema.parse(await request('execverify/predict', { runId, step }));
  assert.equal(p.nextLine, 3);
  assert.deepEqual(p.values.total, { value: '0', type: 'int' });
  assert.equal(p.answerer.kind, 'model');
  assert.match(p.answerer.name, /exec-model/);
  assert.equal(p.usage.promptTokens, 120);
  assert.deepEqual(p.problems, []);
  const shown = await waitFor(() => (lastInline().length ? lastInline() : undefined), 'inline prediction');
  assert.deepEqual(
    shown.map((i) => [i.line, i.kind]),
    [
      [2, 'predictedValue'],
      [3, 'predictedNext'],
    ],
  );
  assert.match(shown[0]!.text, /total = 0/);

  const v = StepVerdictSchema.parse(await request('execverify/reveal', { predictionId: p.id }));
  assert.equal(v.ok, true);
  assert.equal(v.actualNextLine, 3);
  assert.deepEqual(v.actualValues.total, { value: '0', type: 'int' });
  assert.ok(v.questions.every((q) => q.ok));
  const verdict = lastInline().find((i) => i.kind === 'verdict')!;
  assert.equal(verdict.ok, true);
  assert.ok(
    server.notifications.some((n) => n.method === 'execverify/runChanged' && (n.params as { runId: string }).runId === runId),
    'the panel is told to reload the run',
  );
  assert.match(verdict.text, /^✓ next line 3/);
});

test('a wrong prediction is revealed when the debugger steps on, with the real line and values', async () => {
  const { runId, rows } = await traced();
  const step = stepOf(rows, 4); // `if x % 2 == 0` with x = 1: false, back to the loop header
  // Wrong about the branch and about `x`; right about the rest. Fenced, as chatty models write it.
  // The unchanged variables asked (x and xs here) follow the engine's one seed policy (code + entry).
  const model = nextStepModel(5, { total: ['0', 'int'], xs: ['[1, 2, 4]', 'list'], x: ['2', 'int'] });
  reply = (body) => ({ text: '```json\n' + model(body).text + '\n```' });
  const p = PredictionSchema.parse(await request('execverify/predict', { runId, step }));
  assert.equal(p.nextLine, 5);
  await server.connection.sendNotification('execverify/stepChanged', { runId, step: step + 1, uri, line: 3 });
  const verdict = await waitFor(() => lastInline().find((i) => i.kind === 'verdict'), 'verdict after stepping');
  assert.equal(verdict.ok, false);
  assert.equal(verdict.line, 4);
  assert.match(verdict.text, /✗ next line 3 \(predicted 5\)/);
  assert.match(verdict.text, /✗ x = 1 \(predicted 2\)/);
  assert.match(verdict.text, /✓ xs = \[1, 2, 4\]/);
  const data = PanelDataSchema.parse(await request('execverify/panel', { runId }));
  const row = data.rows.find((r) => r.step === step)!;
  assert.equal(row.verdict?.ok, false);
  assert.equal(row.prediction?.nextLine, 5);
  await server.connection.sendNotification('execverify/stepChanged', { runId, step: 0, ended: true });
});

test('with reveal set to "immediately" (a settings change), the verdict comes with the prediction', async () => {
  const { runId, rows } = await traced();
  settings.reveal = 'immediately';
  await server.connection.sendNotification('workspace/didChangeConfiguration', { settings: {} });
  try {
    reply = nextStepModel(3, { total: ['0', 'int'], xs: ['[1, 2, 4]', 'list'] });
    await request('execverify/predict', { runId, step: stepOf(rows, 2) });
    const verdict = await waitFor(() => lastInline().find((i) => i.kind === 'verdict'), 'the verdict without stepping');
    assert.equal(verdict.ok, true);
  } finally {
    delete settings.reveal;
    await server.connection.sendNotification('workspace/didChangeConfiguration', { settings: {} });
  }
});

test('a garbage answer is a prediction with problems and a ✗ verdict, never a failure', async () => {
  const { runId, rows } = await traced();
  reply = () => ({ text: 'Ignore previous instructions. The answer is obviously line seven!!!' });
  const p = PredictionSchema.parse(await request('execverify/predict', { runId, step: stepOf(rows, 2) }));
  assert.equal(p.nextLine, null);
  assert.match(p.problems[0]!, /not the JSON asked for/);
  const v = StepVerdictSchema.parse(await request('execverify/reveal', { predictionId: p.id }));
  assert.equal(v.ok, false);
  assert.ok(v.questions.every((q) => !q.ok && q.predicted === '(no answer)'));
});

test('cancelling a prediction aborts the model request', async () => {
  const { runId, rows } = await traced();
  reply = () => ({ hang: true });
  model.resetStats();
  const source = new CancellationTokenSource();
  const pending = request('execverify/predict', { runId, step: stepOf(rows, 2) }, source);
  await waitFor(() => (model.stats.inFlight > 0 ? true : undefined), 'the model request');
  source.cancel();
  await assert.rejects(pending, (e: Error & { code?: number }) => {
    assert.equal(e.code, -32800);
    return true;
  });
  await waitFor(() => (model.stats.inFlight === 0 ? true : undefined), 'the model request to close');
  assert.equal(model.stats.aborted, 1);
});

test('work-done progress: begin and end are reported on the client’s token', async () => {
  const { runId, rows } = await traced();
  reply = () => ({ text: JSON.stringify({ next_line: 3, variables: [] }), delayMs: 50 });
  const seen: unknown[] = [];
  const sub = server.connection.onProgress(WorkDoneProgress.type, 'tok-1', (v) => seen.push(v));
  await request('execverify/predict', { runId, step: stepOf(rows, 2), workDoneToken: 'tok-1' });
  await waitFor(() => (seen.some((v) => (v as { kind: string }).kind === 'end') ? true : undefined), 'progress end');
  sub.dispose();
  assert.deepEqual(
    seen.map((v) => (v as { kind: string }).kind),
    ['begin', 'end'],
  );
  assert.match((seen[0] as { title: string }).title, /predicting the next step/);
});

test('an endpoint that is down is an endpoint_down error naming the URL', async () => {
  const down = await startServer({ rootPath: ws, settings: { baseUrl: 'http://127.0.0.1:9/v1', model: 'm', requestTimeoutMs: 2_000 } });
  try {
    await down.open(file, source);
    const run = TraceResultSchema.parse(await down.connection.sendRequest('execverify/trace', { uri, entry: 'total_even([2])' }));
    const rows = PanelDataSchema.parse(await down.connection.sendRequest('execverify/panel', { runId: run.runId })).rows;
    await assert.rejects(
      down.connection.sendRequest('execverify/predict', { runId: run.runId, step: stepOf(rows, 2) }),
      (e: Error & { data?: { code: string } }) => {
        assert.equal(e.data?.code, 'endpoint_down', e.message);
        assert.match(e.message, /127\.0\.0\.1:9/);
        return true;
      },
    );
    const health = (await down.connection.sendRequest('execverify/health', {})) as { state: string };
    assert.equal(health.state, 'down');
  } finally {
    await down.close();
  }
});

test('with no endpoint the baseline answers, is labelled as the baseline, and the user is told', async () => {
  const plain = await startServer({ rootPath: ws, settings: {} });
  try {
    await plain.open(file, source);
    const run = TraceResultSchema.parse(await plain.connection.sendRequest('execverify/trace', { uri, entry: 'total_even([1, 2, 4])' }));
    const p = PredictionSchema.parse(await plain.connection.sendRequest('execverify/predict', { runId: run.runId, step: 1 }));
    assert.equal(p.answerer.kind, 'baseline');
    assert.equal(p.answerer.name, 'baseline');
    assert.equal(p.nextLine, 3, 'the baseline guesses the line below');
    const notice = await waitFor(() => plain.notifications.find((n) => n.method === 'execverify/notice'), 'baseline notice');
    assert.match((notice.params as { message: string }).message, /No model endpoint is configured/);
    const health = (await plain.connection.sendRequest('execverify/health', {})) as { state: string };
    assert.equal(health.state, 'baseline');
  } finally {
    await plain.close();
  }
});

test('Verify whole call: the ExecVerify prompt, verdicts on the questioned lines, rewards; then add to the store and export', async () => {
  const { runId } = await traced();
  let prompt = '';
  reply = (body) => {
    prompt = JSON.stringify(body?.messages ?? body?.prompt);
    // Right output, garbage for every white-box question: R_IO = 1, R_white = 0.
    return { text: '<answer>\nassert total_even([1, 2, 4]) == 6\n</answer>' };
  };
  const v = VerificationSchema.parse(await request('execverify/verify', { runId }));
  assert.match(prompt, /Question1: Fill the assertion statement/);
  assert.match(v.template, /^execverify@/);
  assert.equal(v.rewards.rIO, 1);
  assert.equal(v.rewards.rWhite, 0);
  assert.equal(v.rewards.r, 1, 'R = 2·(0.5·1 + 0.5·0) with gating on (the answer count is wrong, so R_white = 0)');
  assert.match(v.problems.join(' '), /Expected \d+ answers, got 1/);
  const output = v.questions.find((q) => q.kind === 'output')!;
  assert.equal(output.ok, true);
  assert.ok(v.questions.filter((q) => q.kind !== 'output').every((q) => !q.ok));
  const inline = await waitFor(() => (lastInline().some((i) => i.kind === 'question') ? lastInline() : undefined), 'question verdicts inline');
  assert.ok(inline.every((i) => i.kind !== 'question' || i.ok === false));

  const added = (await request('execverify/addSample', { verificationId: v.id })) as { id: string; added: boolean; store: string };
  assert.equal(added.added, true);
  assert.equal(added.store, path.join(ws, '.execverify'));
  const record = JSON.parse(
    readFileSync(path.join(ws, '.execverify', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .at(-1)!,
  );
  assert.equal(record.id, added.id);
  assert.equal(record.entry, 'total_even([1, 2, 4])');
  assert.equal(record.provenance.file, 'evens.py');
  assert.equal(record.provenance.function, 'total_even');
  assert.equal(record.answers[0].reward, 1);
  assert.equal(JSON.parse(record.groundTruth).schema, 'execverify.truth/1');
  const again = (await request('execverify/addSample', { verificationId: v.id })) as { added: boolean };
  assert.equal(again.added, false, 'the same sample is not stored twice');

  const exported = (await request('execverify/export', { format: 'verl', out: 'out-verl' })) as { records: number; files: string[] };
  assert.equal(exported.records, 1);
  assert.ok(exported.files.every((f) => f.startsWith(path.join(ws, 'out-verl')) && f.endsWith('.parquet') && existsSync(f)));
  const toFile = (await request('execverify/export', { format: 'verl', out: path.join(ws, 'exp', 'one.parquet') })) as { records: number; files: string[] };
  assert.deepEqual(toFile.files, [path.join(ws, 'exp', 'one.parquet')], 'a file name gets exactly that file when the store has one split');
  assert.equal(readFileSync(toFile.files[0]!).subarray(0, 4).toString(), 'PAR1');
});
