// Predict Result in the editor: a CodeLens above each test of a Python file;
// its command asks the model whether the test passes and what the call it
// tests returns (shown at once, labelled as a prediction), then runs the test
// under the tracer and shows the real result beside it with ✓ / ✗, and a lens
// that opens the run in the replay debugger. The asking and judging are
// engine/simulate/test-predict on the one ask road; this file holds the
// editor's side: lenses, what is shown, and the order of the steps.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { CodeLens } from 'vscode-languageserver/node';
import { answerPrompt, parseReply, type AskPrompt } from '../engine/ask';
import { findTests, testContext, type PythonTest, type TestContext } from '../engine/simulate/test-functions';
import { askedCalls, judgeTest, returnedValue, standaloneCall, testPrompts, testRun, type TestRun } from '../engine/simulate/test-predict';
import type { Trace } from '../engine/trace/schema';
import { fromModelError, type Answering } from './asking';
import { EngineError, type Engine, type ModelAccess, type TestAnswers } from './engine-port';
import type { TestPrediction } from './protocol';

/** LiveEngine.askTest: each prompt answered through the provider (the baseline when no endpoint is set). */
export async function askTest(engine: Answering, prompts: AskPrompt[], access: ModelAccess, signal: AbortSignal): Promise<TestAnswers> {
  const { provider, note } = engine.answerer(access);
  let answered;
  try {
    answered = await Promise.all(prompts.map((p) => answerPrompt(provider, p, { signal })));
  } catch (e) {
    throw fromModelError(e, access.settings);
  }
  const answers: (string | null)[] = [];
  const problems: string[] = [];
  let promptTokens = 0;
  let completionTokens = 0;
  for (const [i, a] of answered.entries()) {
    const parsed = a.samples[0]?.parsed ?? parseReply(prompts[i]!, '');
    answers.push(parsed.answers[0] ?? null);
    problems.push(...parsed.problems);
    promptTokens += a.reply.usage.promptTokens ?? 0;
    completionTokens += a.reply.usage.completionTokens ?? 0;
  }
  return {
    answers,
    answerer: { kind: provider.info.kind, name: provider.info.label, ...(note ? { note } : {}) },
    usage: { latencyMs: Math.max(0, ...answered.map((a) => a.latencyMs)), promptTokens, completionTokens },
    problems,
  };
}

/** LiveEngine.judgeTest. */
export async function judgeTestAnswers(
  engine: Answering,
  test: PythonTest,
  context: TestContext,
  answers: (string | null)[],
  run: TestRun,
  access: ModelAccess,
  signal: AbortSignal,
): Promise<(boolean | null)[]> {
  try {
    return await judgeTest(engine.judge(access.settings), test, context, answers, run, signal);
  } catch (e) {
    if (signal.aborted) throw new EngineError('cancelled', 'cancelled');
    throw new EngineError('internal', `The judge failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** A module `m` imported by a test file, read from beside it (`m.py`, `m/__init__.py`), for the prompt. */
export function siblingModule(file: string): (module: string) => string | undefined {
  return (module) => {
    const base = path.join(path.dirname(file), ...module.split('.'));
    for (const candidate of [`${base}.py`, path.join(base, '__init__.py')]) {
      try {
        if (existsSync(candidate)) return readFileSync(candidate, 'utf8');
      } catch {
        return undefined;
      }
    }
    return undefined;
  };
}

/** Cut for lens titles: a model's answer may be huge or hold line breaks. */
export function short(text: string, max = 60): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** The lenses of one file: "Predict result" above each test, and the latest prediction and real result of each. */
export function testLenses(uri: string, tests: PythonTest[], predictions: ReadonlyMap<string, TestPrediction>, trusted: boolean): CodeLens[] {
  const lenses: CodeLens[] = [];
  for (const t of tests) {
    const range = { start: { line: t.line - 1, character: 0 }, end: { line: t.line - 1, character: 0 } };
    lenses.push({ range, command: { title: 'Predict result', command: 'execverify.predictResult', arguments: [uri, t.name, t.line] } });
    const p = predictions.get(testKey(uri, t));
    if (!p || p.entry !== t.entry) continue;
    const [passes, call] = p.answers;
    const predicted = [passes && `${passes.predicted === 'True' ? 'passes' : passes.predicted === 'False' ? 'fails' : short(passes.predicted, 20)}`];
    if (call) predicted.push(`${short(call.asked, 30)} → ${short(call.predicted, 30)}`);
    // Labelled as a prediction, and as the baseline's when no model answered.
    lenses.push({ range, command: { title: `Prediction${p.answerer.kind === 'baseline' ? ' (baseline)' : ''}: ${predicted.join(', ')}`, command: '' } });
    if (p.real) {
      // ✓ / ✗: the judge's verdict on the prediction beside it; nothing where there is no truth to judge against.
      const mark = (ok: boolean | null | undefined) => (ok === true ? ' ✓' : ok === false ? ' ✗' : '');
      const real = [`${p.real.status === 'passed' ? 'passed' : short(p.real.detail, 50)}${mark(passes?.ok)}`];
      if (call) real.push(call.actual === null ? 'return value not recorded' : `returned ${short(call.actual, 30)}${mark(call.ok)}`);
      lenses.push({ range, command: { title: `Real: ${real.join(', ')}`, command: '' } });
      // The replay debugger records the run again (the same entry); Restricted Mode runs nothing.
      if (trusted) lenses.push({ range, command: { title: 'Open trace in replay debugger', command: 'execverify.trace', arguments: [uri, t.name, t.entry] } });
    }
  }
  return lenses;
}

export const testKey = (uri: string, t: Pick<PythonTest, 'name' | 'className'>) => `${uri}#${t.className ? `${t.className}.` : ''}${t.name}`;

/** The test named at `line` (the lens's), or the only test of that name. */
export function findTest(source: string, name: string, line: number): PythonTest {
  const tests = findTests(source).filter((t) => t.name === name);
  const test = tests.find((t) => t.line === line) ?? (tests.length === 1 ? tests[0] : undefined);
  if (!test) {
    throw new EngineError(
      'bad_params',
      `No test ${name} at line ${line}. Predict Result works on pytest tests (def test_*() at module level or in a class Test*) and unittest TestCase test methods that take no parameters.`,
    );
  }
  return test;
}

/**
 * Predict, show, run, judge, show. `show` is called with the prediction
 * before the test runs (the editor draws it at once) and again with the result.
 */
export async function predictAndRun(
  engine: Engine,
  access: ModelAccess,
  input: { id: string; uri: string; file: string; source: string; name: string; line: number },
  steps: {
    run(test: PythonTest, signal: AbortSignal): Promise<{ runId: string; trace: Trace }>;
    /** A call expression run on its own in the test file's namespace (engine/simulate/test-predict standaloneCall). */
    evaluate(expr: string, signal: AbortSignal): Promise<Trace>;
    /** Resolves once the client has been told (the prediction is on screen before the test runs). */
    show(prediction: TestPrediction, test: PythonTest): Promise<void>;
    report(message: string): void;
  },
  signal: AbortSignal,
): Promise<TestPrediction> {
  const test = findTest(input.source, input.name, input.line);
  const context = testContext(input.source, test, siblingModule(input.file));
  steps.report('asking the model');
  const asked = await engine.askTest(testPrompts(test, context), access, signal);
  const prediction: TestPrediction = {
    id: input.id,
    uri: input.uri,
    test: test.className ? `${test.className}.${test.name}` : test.name,
    line: test.line,
    entry: test.entry,
    answers: askedCalls(test, context).map((expr, i) => ({ asked: expr, predicted: asked.answers[i] ?? '(no answer)', actual: null, ok: null })),
    real: null,
    runId: null,
    answerer: asked.answerer,
    usage: asked.usage,
    problems: asked.problems,
  };
  await steps.show(prediction, test);
  steps.report('running the test under the tracer');
  const { runId, trace } = await steps.run(test, signal);
  const inTest = testRun(trace, test, context);
  const alone = inTest.callValue ? undefined : standaloneCall(context);
  const callValue = alone ? returnedValue(await steps.evaluate(alone, signal)) : inTest.callValue;
  const real: TestRun = callValue ? { ...inTest, callValue } : inTest;
  steps.report('judging');
  const verdicts = await engine.judgeTest(test, context, asked.answers, real, access, signal);
  const actual = [real.status === 'error' ? null : real.status === 'passed' ? 'True' : 'False', real.callValue ? real.callValue.repr : null];
  const done: TestPrediction = {
    ...prediction,
    answers: prediction.answers.map((a, i) => ({ ...a, actual: actual[i] ?? null, ok: verdicts[i] ?? null })),
    real: { status: real.status, detail: real.detail },
    runId,
  };
  await steps.show(done, test);
  return done;
}
