// Locals named like Object.prototype members through the real engine server:
// the real tracer records them, the next-step questions ask about them, the
// model's answer about them is read, the real judge scores them, and the
// verdict carries them back over LSP (zod's record would drop `__proto__`).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { PanelDataSchema, PredictionSchema, StepVerdictSchema, TraceResultSchema } from '../../src/server/protocol';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { startServer, type ServerUnderTest } from './lsp-client';

const REPO = path.resolve(__dirname, '..', '..');
const ws = mkdtempSync(path.join(tmpdir(), 'ev-names-'));
const file = path.join(ws, 'dbg_names.py');
const source = readFileSync(path.join(REPO, 'test/fixtures/programs/dbg_names.py'), 'utf8');
writeFileSync(file, source);
const uri = pathToFileURL(file).href;

/** The true values after each line of names(3), as the model is scripted to answer them. */
const TRUTH = new Map<string, [string, string]>([
  ['n', ['3', 'int']],
  ['__proto__', ['3', 'int']],
  ['constructor', ['[3, 4]', 'list']],
  ['toString', ["'hi'", 'str']],
  ['hasOwnProperty', ['4', 'int']],
]);
const asked: string[][] = [];

let model: OpenAIServer;
let server: ServerUnderTest;
before(async () => {
  model = await startOpenAIServer({
    models: ['m'],
    script: (r) => {
      const prompt = JSON.stringify(r.body?.messages ?? '');
      const names = [...prompt.matchAll(/- (\w+): value and type/g)].map((m) => m[1]!);
      asked.push(names);
      const variables = names.filter((n) => TRUTH.has(n)).map((name) => ({ name, value: TRUTH.get(name)![0], type: TRUTH.get(name)![1] }));
      return { text: JSON.stringify({ next_line: -2, variables }) };
    },
  });
  server = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications' },
    settings: { baseUrl: model.url, model: 'm', requestTimeoutMs: 20_000 },
  });
  await server.open(file, source);
});
after(async () => {
  await server.close();
  await model.close();
});

test('a local named __proto__, constructor or toString is asked, answered, judged and shown like any other', { timeout: 120_000 }, async () => {
  const run = TraceResultSchema.parse(await server.connection.sendRequest('execverify/trace', { uri, entry: 'names(3)' }));
  const rows = PanelDataSchema.parse(await server.connection.sendRequest('execverify/panel', { runId: run.runId })).rows;
  const changedAt: Record<number, string> = { 2: '__proto__', 3: 'constructor', 4: 'toString', 5: 'hasOwnProperty' };
  for (const [line, name] of Object.entries(changedAt)) {
    const step = rows.find((r) => r.event === 'line' && r.line === Number(line))!.step;
    const p = PredictionSchema.parse(await server.connection.sendRequest('execverify/predict', { runId: run.runId, step }));
    assert.ok(asked.at(-1)!.includes(name), `line ${line} asks about ${name}: ${asked.at(-1)!.join(', ')}`);
    assert.ok(Object.hasOwn(p.values, name), `the answer about ${name} is kept`);
    assert.deepEqual(p.values[name], { value: TRUTH.get(name)![0], type: TRUTH.get(name)![1] });
    const v = StepVerdictSchema.parse(await server.connection.sendRequest('execverify/reveal', { predictionId: p.id }));
    const q = v.questions.find((x) => x.var === name);
    assert.ok(q, `a verdict on ${name}`);
    assert.equal(q.ok, true, `${name}: predicted ${q.predicted}, actual ${q.actual}`);
    assert.ok(Object.hasOwn(v.actualValues, name));
    assert.deepEqual(v.actualValues[name], { value: TRUTH.get(name)![0], type: TRUTH.get(name)![1] });
    // Absent names read as absent, not as Object's members.
    assert.equal(v.actualValues.valueOf, undefined);
  }
});
