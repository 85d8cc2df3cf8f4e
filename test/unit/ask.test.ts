// The engine's one road (src/engine/ask): real traces, a model over HTTP (the
// OpenAI-compatible test server) or the baseline, the real Python judge.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AskError, ask, parseReply, prepareAsk, questionSeed } from '../../src/engine/ask';
import { harvestAsking } from '../../src/engine/harvest/questioner';
import { JudgeClient } from '../../src/engine/judge/client';
import { BaselineProvider, ModelProvider } from '../../src/engine/model';
import { BUILTIN_TEMPLATES, type Template } from '../../src/engine/model/templates';
import { seedFrom } from '../../src/engine/questions';
import type { Question } from '../../src/engine/questions/schema';
import { TracerPool } from '../../src/engine/trace/runner';
import type { Trace } from '../../src/engine/trace/schema';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const SOURCE = [
  'def f(xs):',
  '    total = 0',
  '    for x in xs:',
  '        if x % 2:',
  '            total += x',
  '        else:',
  '            total -= 1',
  '    return total',
  '',
].join('\n');
const ENTRY = 'f([1, 2, 3, 4])';
const template = (name: string): Template => BUILTIN_TEMPLATES.find((t) => t.name === name)!;

let pool: TracerPool;
let server: OpenAIServer;
let trace: Trace;
before(async () => {
  pool = new TracerPool({ size: 1 });
  server = await startOpenAIServer();
  trace = await pool.trace({ source: SOURCE, path: 'prog.py', entry: { kind: 'call', expr: ENTRY } });
});
after(async () => {
  await server.close();
  await pool.close();
});

test('the seed comes from the code and the entry, so every caller asks the same questions about the same call', () => {
  assert.equal(questionSeed(trace), seedFrom(`${SOURCE}\u0000${ENTRY}`));
  const editor = prepareAsk(trace, template('execverify'), { kind: 'call' });
  const again = prepareAsk(trace, template('execverify'), { kind: 'call' });
  assert.deepEqual(again.prompts[0]!.questions, editor.prompts[0]!.questions);
  const harvested = harvestAsking(template('execverify')).questioner(trace, { code: SOURCE, entry: ENTRY, function: 'f' });
  assert.ok(!('skip' in harvested));
  assert.deepEqual(harvested.questions, editor.prompts[0]!.questions, 'a harvest asks what the editor asks');
  assert.equal(harvested.reference, editor.prompts[0]!.reference);
  const other = prepareAsk(trace, template('execverify'), { kind: 'call' }, { seed: questionSeed(trace) + 1 });
  assert.equal(other.seed, questionSeed(trace) + 1, 'an explicit seed (execverify ask --question-seed) overrides the policy');
});

test('a perfect model earns R = 2 and a verdict of right on every question', async () => {
  const prepared = prepareAsk(trace, template('execverify'), { kind: 'call' });
  const perfect = prepared.prompts[0]!.reference;
  server.setScript(() => ({ text: `Tracing it.\n${perfect}` }));
  const provider = new ModelProvider({ baseURL: server.url, model: 'm', retries: 0 });
  try {
    const result = await ask(trace, { kind: 'call' }, template('execverify'), {
      provider,
      judge: new JudgeClient(pool),
      samples: 2,
      reward: { alpha: 0.5, gating: true },
    });
    const [outcome] = result.prompts;
    assert.ok(outcome?.ok);
    assert.equal(outcome.samples.length, 2);
    for (const s of outcome.samples) {
      assert.equal(s.reward?.reward, 2);
      assert.ok(s.verdicts.every((v) => v.correct));
      assert.equal(s.parsed.answers.length, outcome.prompt.questions.length);
      assert.ok(
        s.parsed.answers.every((a) => a !== null),
        'the line parser found an answer per question',
      );
    }
  } finally {
    provider.close();
  }
});

test("the template's stop sequences always go with the request", async () => {
  server.setScript(() => ({ text: 'assert f([1, 2, 3, 4]) == 2\n' }));
  server.resetStats();
  const provider = new ModelProvider({ baseURL: server.url, model: 'm', api: 'completions', retries: 0 });
  try {
    const result = await ask(trace, { kind: 'call' }, template('cruxeval-output'), { provider, judge: new JudgeClient(pool) });
    assert.ok(result.prompts[0]?.ok);
    assert.deepEqual(server.requests.at(-1)!.body!.stop, ['[/ANSWER]']);
    assert.equal(result.prompts[0].samples[0]!.reward?.r_io, 1, 'f([1, 2, 3, 4]) returns 2');
  } finally {
    provider.close();
  }
});

test('a provider failure is that prompt’s outcome, not an exception', async () => {
  server.setScript(() => ({ status: 404, json: { error: { message: 'no such model' } } }));
  const provider = new ModelProvider({ baseURL: server.url, model: 'nope', retries: 0 });
  try {
    const result = await ask(trace, { kind: 'call' }, template('execverify'), { provider, judge: new JudgeClient(pool) });
    assert.equal(result.prompts.length, 1);
    assert.equal(result.prompts[0]!.ok, false);
  } finally {
    provider.close();
  }
});

test('the next step at a cursor: the baseline answers in JSON, each answer is judged', async () => {
  const step = trace.steps.findIndex((s) => s.event === 'line' && s.line === 4);
  const result = await ask(trace, { kind: 'step', step }, template('next-step'), { provider: new BaselineProvider(), judge: new JudgeClient(pool) });
  const [outcome] = result.prompts;
  assert.ok(outcome?.ok);
  const sample = outcome.samples[0]!;
  assert.ok(sample.parsed.nextStep, 'the JSON was read');
  assert.equal(sample.verdicts.length, outcome.prompt.questions.length);
  const next = outcome.prompt.questions.findIndex((q) => q.kind === 'next_line');
  assert.equal(sample.parsed.answers[next], '5', 'the baseline guesses the line below');
  assert.equal(sample.verdicts[next]!.correct, true, 'x = 1 is odd: line 5 runs next');
  assert.throws(
    () => prepareAsk(trace, template('next-step'), { kind: 'step', step: 0 }),
    (e: unknown) => e instanceof AskError && e.code === 'not_a_line',
  );
});

test('next-step answers go through the one parser, state_any included', () => {
  const questions = [
    { kind: 'next_line', id: 'n', fn: 'f', frame: 1, line: 4, lineText: 'if x % 2:', k: 1, truth: { line: 5, text: 'total += x' } },
    { kind: 'state_any', id: 's', fn: 'f', frame: 1, line: 5, lineText: 'total += x', var: 'total', truth: { values: [] } },
    { kind: 'state', id: 't', fn: 'f', frame: 1, line: 5, lineText: 'total += x', k: 1, var: 'x', truth: { nil: true } },
  ] as Question[];
  const text = JSON.stringify({ next_line: 5, variables: [{ name: 'total', value: '1', type: 'int' }] });
  const parsed = parseReply({ format: 'next_step_json', questions }, text);
  assert.deepEqual(parsed.answers, ['5', '1; int', null]);
  assert.deepEqual(parsed.problems, ['No answer for x.']);
  assert.match(parseReply({ format: 'next_step_json', questions }, 'line seven').problems[0]!, /not the JSON asked for/);
});
