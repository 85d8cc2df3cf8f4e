// Predict Result: a model predicts whether a test passes and what the call it
// tests returns; the tracer's run of the test is the truth. Both questions are
// output questions on the one ask road (engine/ask): rendered by the
// predict-test template, answered through the provider, read by its parser and
// judged by the Python judge, so the verdict rules are those of every output
// question. See docs/self-simulation.md#in-the-editor.
import { judgeAnswers, type AskPrompt } from '../ask';
import type { JudgeClient } from '../judge/client';
import { BUILTIN_TEMPLATES, renderPrompts, type Template } from '../model/templates';
import type { Question } from '../questions/schema';
import { referenceAnswer, toGroundTruth } from '../questions/truth';
import type { Trace, Value } from '../trace/schema';
import type { OutputTruth } from './predict';
import type { PythonTest, TestContext } from './test-functions';

export const PREDICT_TEST_TEMPLATE: Template = BUILTIN_TEMPLATES.find((t) => t.name === 'predict-test')!;

const TRUE: Value = { repr: 'True', type: 'bool', literal: true };
const FALSE: Value = { repr: 'False', type: 'bool', literal: true };

/** The expressions asked about: `passes(test)` always, the tested call when the test makes one. */
export function askedCalls(test: PythonTest, ctx: TestContext): string[] {
  return ctx.call ? [test.label, ctx.call] : [test.label];
}

/**
 * One prompt per asked expression (they share the code prefix). `truths` are
 * the real run's (absent when asking: the answer does not depend on them).
 */
export function testPrompts(test: PythonTest, ctx: TestContext, truths?: (OutputTruth | undefined)[]): AskPrompt[] {
  return askedCalls(test, ctx).map((call, i) => {
    const question: Question = { kind: 'output', id: `${test.label}/${i}`, call, truth: truths?.[i] ?? { value: TRUE } };
    const [prompt] = renderPrompts(PREDICT_TEST_TEMPLATE, [question], { code: ctx.code }).prompts;
    return {
      ...prompt!,
      baseline: [{ kind: 'output' }],
      groundTruth: toGroundTruth([question], PREDICT_TEST_TEMPLATE.format),
      reference: referenceAnswer([question], PREDICT_TEST_TEMPLATE.format),
    };
  });
}

/** The real result of a test run. */
export interface TestRun {
  status: 'passed' | 'failed' | 'error';
  /** "passed", "AssertionError: 5 != 6", "stopped: …". */
  detail: string;
  /** The tested call's return value, when the tracer recorded it (a callee in the test's own file). */
  callValue?: Value;
}

const sameFn = (fn: string, name: string) => fn === name || fn.endsWith(`.${name}`);

/** What the trace of `test.entry` says: passed (returned), failed (raised), or neither (a limit, a crash). */
export function testRun(trace: Trace, test: PythonTest, ctx: TestContext): TestRun {
  const o = trace.outcome;
  const status = o.kind === 'returned' ? 'passed' : o.kind === 'raised' ? 'failed' : 'error';
  const detail =
    o.kind === 'returned' ? 'passed' : o.kind === 'raised' ? `${o.type}: ${o.message}` : `did not finish (${o.kind}: ${'message' in o ? o.message : ''})`;
  let callValue: Value | undefined;
  const testFrame = trace.steps.find((s) => s.event === 'call' && sameFn(s.fn, test.name))?.frame;
  if (testFrame !== undefined && ctx.callee) {
    // The tested call's frame: the first call of the callee made directly from the test.
    const callFrame = trace.steps.find((s) => s.event === 'call' && !s.resumed && s.parent === testFrame && sameFn(s.fn, ctx.callee!))?.frame;
    if (callFrame !== undefined) callValue = trace.steps.find((s) => s.event === 'return' && s.frame === callFrame && !s.yielded)?.value;
  }
  return callValue ? { status, detail, callValue } : { status, detail };
}

/**
 * The tested call as a run of its own, when the tracer cannot see it inside
 * the test (the callee is imported from another file) and it stands alone: its
 * arguments name nothing but literals (`add(2, 3)`, not `mean(xs)`), so the
 * call evaluated in a fresh run of the test file returns what the test's call
 * returned (for a callee whose result depends only on its arguments).
 */
export function standaloneCall(ctx: TestContext): string | undefined {
  if (!ctx.call || !ctx.callee || ctx.calleeTraced) return undefined;
  const args = ctx.call.slice(ctx.callee.length).replace(/(["'])(?:\\.|(?!\1).)*\1/g, '""');
  // Names, not keyword argument names (`x=1`).
  const names = [...args.matchAll(/(?<![\w.])([A-Za-z_]\w*)(?!\w*\s*=(?!=))/g)].map((m) => m[1]!);
  // An attribute of a name (`math.pi`) names it; a literal's (`(1).real`) does not, and is as pure.
  return names.every((n) => n === 'True' || n === 'False' || n === 'None') ? ctx.call : undefined;
}

/** The standalone call's return value, from its run (undefined: it did not return). */
export function returnedValue(trace: Trace): Value | undefined {
  return trace.outcome.kind === 'returned' ? trace.outcome.value : undefined;
}

/** The truth of each asked expression: passes → the real pass/fail; the call → its recorded value (unknown: not judged). */
export function testTruths(run: TestRun, ctx: TestContext): (OutputTruth | undefined)[] {
  const passes: OutputTruth | undefined = run.status === 'error' ? undefined : { value: run.status === 'passed' ? TRUE : FALSE };
  return ctx.call ? [passes, run.callValue ? { value: run.callValue } : undefined] : [passes];
}

/** Judges each answer against the real run by the judge's output rule; null where the run gives no truth. */
export async function judgeTest(
  judge: JudgeClient,
  test: PythonTest,
  ctx: TestContext,
  answers: readonly (string | null)[],
  run: TestRun,
  signal?: AbortSignal,
): Promise<(boolean | null)[]> {
  const truths = testTruths(run, ctx);
  const prompts = testPrompts(test, ctx, truths);
  return Promise.all(prompts.map(async (p, i) => (truths[i] ? (await judgeAnswers(judge, p, [answers[i] ?? null], signal))[0]!.correct : null)));
}
