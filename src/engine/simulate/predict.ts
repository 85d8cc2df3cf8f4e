// Predictions of candidate runs, on the one ask road (engine/ask): the output
// question "what does this program return / print on public test i", asked
// through the provider, read by the template's parser and judged by the Python
// judge against the test's expectation and against the real run.
import { answerPrompt, judgeAnswers, type AskPrompt } from '../ask';
import type { JudgeClient } from '../judge/client';
import type { TruthByKind } from '../judge/schema';
import type { Provider } from '../model/provider';
import { renderPrompts, type Template } from '../model/templates';
import type { Question } from '../questions/schema';
import { referenceAnswer, toGroundTruth } from '../questions/truth';
import type { AnswerSource } from '../synthesize/pipeline';
import type { TracerPool } from '../trace/runner';
import type { z } from 'zod';
import type { Candidate, Problem } from './problem';
import type { CandidateRuns, RunTruth } from './real';
import { FUNCTION_TEMPLATE, SCRIPT_TEMPLATE, scriptCall } from './templates';

export type OutputTruth = z.infer<(typeof TruthByKind)['output']>;

export interface SimulateDeps {
  provider: Provider;
  judge: JudgeClient;
  pool: TracerPool;
  signal?: AbortSignal;
  /** Writes fixed programs (self-fixing, `turns` > 0); the baseline has none, so it fixes nothing. */
  fixer?: AnswerSource;
  /** Called after each problem (for progress). */
  onProblem?: (done: number, total: number, problem: string) => void;
}

/** The template a problem's predictions are asked with. */
export function templateFor(problem: Problem): Template {
  return problem.kind === 'function' ? FUNCTION_TEMPLATE : SCRIPT_TEMPLATE;
}

/** The output question "what does `code` return / print on public test i", its truth the test's expectation. */
export function predictionPrompt(problem: Problem, code: string, id: string, index: number, expected: OutputTruth): AskPrompt {
  const test = problem.public[index]!;
  const call = problem.kind === 'function' ? (test as { call: string }).call : scriptCall((test as { stdin: string }).stdin);
  const question: Question = { kind: 'output', id: `${id}/public/${index}`, call, truth: expected };
  const template = templateFor(problem);
  const [prompt] = renderPrompts(template, [question], { code }).prompts;
  return {
    ...prompt!,
    baseline: [{ kind: 'output' }],
    groundTruth: toGroundTruth([question], template.format),
    reference: referenceAnswer([question], template.format),
  };
}

/**
 * The truth each public test's prediction is judged against: a function
 * test's expected literal as the tracer evaluates it (the same Value as a
 * real return value), a script test's expected text under the stdout rule.
 * Throws when an expected value is not a value (a problem-file error).
 */
export async function expectedTruths(pool: TracerPool, problem: Problem, signal?: AbortSignal): Promise<OutputTruth[]> {
  if (problem.kind === 'script') return problem.public.map((t) => ({ scorer: 'stdout', expected: t.expected }));
  const traces = await pool.traceMany(
    problem.public.map((t) => ({ source: '', path: `${problem.id}/expected.py`, entry: { kind: 'call' as const, expr: t.expected } })),
    signal,
  );
  return traces.map((t, i) => {
    if (t instanceof Error) throw new Error(`public test ${i}: expected ${problem.public[i]!.expected} is not a Python value (${t.message})`);
    if (t.outcome.kind !== 'returned') throw new Error(`public test ${i}: expected ${problem.public[i]!.expected} is not a Python value (${t.outcome.kind})`);
    return { value: t.outcome.value };
  });
}

export interface PredictionOutcome {
  answer: string | null;
  simulated_pass: boolean;
  prediction_right: boolean | null;
  error?: string;
  /** The model's reply text. */
  text?: string;
}

/** One prediction asked and judged: against the expectation (does it pass?) and against the real run (was it right?). */
export async function predict(deps: SimulateDeps, prompt: AskPrompt, real: RunTruth | undefined): Promise<PredictionOutcome> {
  let answered;
  try {
    answered = await answerPrompt(deps.provider, prompt, { signal: deps.signal });
  } catch (err) {
    if (deps.signal?.aborted) throw err;
    return { answer: null, simulated_pass: false, prediction_right: null, error: err instanceof Error ? err.message : String(err) };
  }
  const sample = answered.samples[0];
  const answers = sample?.parsed.answers ?? [null];
  const [passes] = await judgeAnswers(deps.judge, prompt, answers, deps.signal);
  let right: boolean | null = null;
  if (real) {
    const q = prompt.questions[0]!;
    const asked: AskPrompt = { ...prompt, questions: [{ ...q, truth: real } as Question] };
    right = (await judgeAnswers(deps.judge, asked, answers, deps.signal))[0]!.correct;
  }
  return { answer: answers[0] ?? null, simulated_pass: passes!.correct, prediction_right: right, text: sample?.text ?? '' };
}

/** Every public-test prediction of each program (all asked at once; the provider's concurrency limit applies). */
export async function predictPrograms(
  deps: SimulateDeps,
  problem: Problem,
  programs: readonly Candidate[],
  runs: readonly CandidateRuns[],
  expected: readonly OutputTruth[],
): Promise<PredictionOutcome[][]> {
  return Promise.all(
    programs.map((c, ci) =>
      Promise.all(
        problem.public.map((_t, i) => {
          const real = runs[ci]!.tests.find((t) => t.split === 'public' && t.index === i)?.truth;
          return predict(deps, predictionPrompt(problem, c.code, c.id, i, expected[i]!), real);
        }),
      ),
    ),
  );
}
