// Self-execution simulation (docs/self-simulation.md): for each problem, each
// candidate and each public test, the model predicts what the candidate
// returns or prints — asked and judged on the one road (engine/ask: prompt →
// provider → parser → Python judge) — and the real runs (real.ts) decide the
// truth. Selection by simulation vs at random vs by the real runs (select.ts).
import { answerPrompt, judgeAnswers, type AskPrompt } from '../ask';
import type { JudgeClient } from '../judge/client';
import type { TruthByKind } from '../judge/schema';
import type { Provider } from '../model/provider';
import { renderPrompts, type Template } from '../model/templates';
import type { Question } from '../questions/schema';
import { referenceAnswer, toGroundTruth } from '../questions/truth';
import type { TracerPool } from '../trace/runner';
import type { z } from 'zod';
import type { Candidate, Problem } from './problem';
import { runPrograms, type CandidateRuns, type RunTruth } from './real';
import { SIMULATE_REPORT_VERSION, type CandidateReport, type ProblemReport, type SimulateReport } from './report';
import { select, summarize } from './select';
import { FUNCTION_TEMPLATE, SCRIPT_TEMPLATE, scriptCall } from './templates';

type OutputTruth = z.infer<(typeof TruthByKind)['output']>;

export interface SimulateDeps {
  provider: Provider;
  judge: JudgeClient;
  pool: TracerPool;
  signal?: AbortSignal;
  /** Called after each problem (for progress). */
  onProblem?: (done: number, total: number, problem: string) => void;
}

export interface SimulateOptions {
  /** Choose among the first k candidates of each problem (default: all). */
  k?: number;
  problemsFile?: string;
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

/** One problem, simulated: real runs, predictions, selection. */
export async function simulateProblem(deps: SimulateDeps, problem: Problem, options: SimulateOptions = {}): Promise<ProblemReport> {
  const candidates = problem.candidates.slice(0, options.k ?? problem.candidates.length);
  const expected = await expectedTruths(deps.pool, problem, deps.signal);
  const runs = await runPrograms(deps.pool, deps.judge, problem, candidates, deps.signal);
  const predictions = await predictPrograms(deps, problem, candidates, runs, expected);
  const reports: CandidateReport[] = candidates.map((c, ci) => {
    const run = runs[ci]!;
    const preds = predictions[ci]!;
    return {
      id: c.id,
      simulated_public: preds.every((p) => p.simulated_pass),
      real_public: run.realPublic,
      real_hidden: run.realHidden,
      ...(c.label ? { label: c.label } : {}),
      predictions: preds.map((p, i) => ({
        test: i,
        answer: p.answer,
        simulated_pass: p.simulated_pass,
        prediction_right: p.prediction_right,
        ...(p.error !== undefined ? { error: p.error } : {}),
      })),
      tests: run.tests.map((t) => ({ split: t.split, test: t.index, passed: t.passed, actual: t.actual })),
    };
  });
  const facts = reports.map((c) => ({ simulated: c.simulated_public, realPublic: c.real_public, realHidden: c.real_hidden }));
  return { id: problem.id, kind: problem.kind, candidates: reports, selection: select(facts) };
}

/** The whole run: every problem (one failing problem is reported, the others still count), then the summary. */
export async function simulate(deps: SimulateDeps, problems: readonly Problem[], options: SimulateOptions = {}): Promise<SimulateReport> {
  const done: ProblemReport[] = [];
  const errors: SimulateReport['errors'] = [];
  for (const [i, problem] of problems.entries()) {
    if (deps.signal?.aborted) throw deps.signal.reason ?? new Error('cancelled');
    try {
      done.push(await simulateProblem(deps, problem, options));
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      errors.push({ problem: problem.id, message: err instanceof Error ? err.message : String(err) });
    }
    deps.onProblem?.(i + 1, problems.length, problem.id);
  }
  return buildReport(deps.provider, done, errors, options);
}

export function buildReport(provider: Provider, problems: ProblemReport[], errors: SimulateReport['errors'], options: SimulateOptions): SimulateReport {
  const facts = problems.map((p) => p.candidates.map((c) => ({ simulated: c.simulated_public, realPublic: c.real_public, realHidden: c.real_hidden })));
  const preds = problems.flatMap((p) => p.candidates.flatMap((c) => c.predictions));
  const compared = preds.filter((p) => p.prediction_right !== null);
  return {
    schema: SIMULATE_REPORT_VERSION,
    provider: { kind: provider.info.kind, label: provider.info.label },
    templates: [FUNCTION_TEMPLATE, SCRIPT_TEMPLATE].map((t) => `${t.name}@${t.version}`),
    problems_file: options.problemsFile ?? '',
    k: options.k ?? null,
    problems,
    summary: {
      ...summarize(facts),
      prediction_accuracy: compared.length ? compared.filter((p) => p.prediction_right).length / compared.length : null,
      predictions: preds.length,
      model_errors: preds.filter((p) => p.error !== undefined).length,
    },
    errors,
  };
}
