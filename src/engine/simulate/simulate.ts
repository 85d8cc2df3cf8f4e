// Self-execution simulation (docs/self-simulation.md): for each problem, each
// candidate and each public test, the model predicts what the candidate
// returns or prints — asked and judged on the one road (engine/ask: prompt →
// provider → parser → Python judge) — and the real runs (real.ts) decide the
// truth. Selection by simulation vs at random vs by the real runs (select.ts).
import type { Provider } from '../model/provider';
import type { Problem } from './problem';
import { runPrograms } from './real';
import { SIMULATE_REPORT_VERSION, type CandidateReport, type ProblemReport, type SimulateReport } from './report';
import { select, summarize } from './select';
import { FUNCTION_TEMPLATE, SCRIPT_TEMPLATE } from './templates';
import { FIX_PROMPT_VERSION, fixCandidate, summarizeFixing } from './fix';
import { expectedTruths, predictPrograms, type SimulateDeps } from './predict';

export type { SimulateDeps } from './predict';

export interface SimulateOptions {
  /** Choose among the first k candidates of each problem (default: all). */
  k?: number;
  problemsFile?: string;
  /** Self-fixing turns for candidates simulated to fail a public test (default 0: none; needs `fixer`). */
  turns?: number;
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
  const turns = options.turns ?? 0;
  if (turns > 0 && deps.fixer) {
    const fixer = deps.fixer;
    await Promise.all(
      reports.map(async (report, ci) => {
        if (report.simulated_public) return;
        const start = { code: candidates[ci]!.code, predictions: predictions[ci]!, runs: runs[ci]! };
        const [simulated, real] = await Promise.all(
          (['simulated', 'real'] as const).map((kind) => fixCandidate(deps, fixer, problem, candidates[ci]!, start, kind, turns, expected)),
        );
        report.fixing = { simulated: simulated!, real: real! };
      }),
    );
  }
  const facts = reports.map((c) => ({ simulated: c.simulated_public, realPublic: c.real_public, realHidden: c.real_hidden }));
  return { id: problem.id, kind: problem.kind, candidates: reports, selection: select(facts) };
}

/** The whole run: every problem (one failing problem is reported, the others still count), then the summary. */
/** What became of one problem: its report, or why it could not be simulated. */
export type Finished = { problem: ProblemReport } | { error: { problem: string; message: string } };

/**
 * The whole run: every problem (one failing problem is reported, the others
 * still count), then the summary. Problems in `resumed` (a killed run's
 * progress) are taken as they are; each newly finished one goes to `onFinished`.
 */
export async function simulate(
  deps: SimulateDeps & { onFinished?: (finished: Finished) => void },
  problems: readonly Problem[],
  options: SimulateOptions & { resumed?: ReadonlyMap<string, Finished> } = {},
): Promise<SimulateReport> {
  const done: ProblemReport[] = [];
  const errors: SimulateReport['errors'] = [];
  for (const [i, problem] of problems.entries()) {
    if (deps.signal?.aborted) throw deps.signal.reason ?? new Error('cancelled');
    let finished = options.resumed?.get(problem.id);
    if (!finished) {
      try {
        finished = { problem: await simulateProblem(deps, problem, options) };
      } catch (err) {
        if (deps.signal?.aborted) throw err;
        finished = { error: { problem: problem.id, message: err instanceof Error ? err.message : String(err) } };
      }
      deps.onFinished?.(finished);
    }
    if ('problem' in finished) done.push(finished.problem);
    else errors.push(finished.error);
    deps.onProblem?.(i + 1, problems.length, problem.id);
  }
  return buildReport(deps.provider, done, errors, options, deps.fixer ? (options.turns ?? 0) : 0);
}

/** The templates whose prompts a report's predictions come from (`name@version`, the fix prompt last when fixing). */
export function templatesOf(turns: number): string[] {
  return [...[FUNCTION_TEMPLATE, SCRIPT_TEMPLATE].map((t) => `${t.name}@${t.version}`), ...(turns > 0 ? [FIX_PROMPT_VERSION] : [])];
}

/** The report of simulated problems; `turns`: the fixing turns that ran (0: no fixing). */
export function buildReport(
  provider: Provider,
  problems: ProblemReport[],
  errors: SimulateReport['errors'],
  options: SimulateOptions,
  turns = 0,
): SimulateReport {
  const facts = problems.map((p) => p.candidates.map((c) => ({ simulated: c.simulated_public, realPublic: c.real_public, realHidden: c.real_hidden })));
  const preds = problems.flatMap((p) => p.candidates.flatMap((c) => c.predictions));
  const compared = preds.filter((p) => p.prediction_right !== null);
  return {
    schema: SIMULATE_REPORT_VERSION,
    provider: { kind: provider.info.kind, label: provider.info.label },
    templates: templatesOf(turns),
    problems_file: options.problemsFile ?? '',
    k: options.k ?? null,
    turns,
    problems,
    summary: {
      ...summarize(facts),
      prediction_accuracy: compared.length ? compared.filter((p) => p.prediction_right).length / compared.length : null,
      predictions: preds.length,
      model_errors: preds.filter((p) => p.error !== undefined).length,
      ...(turns > 0 ? { fixing: summarizeFixing(problems, turns) } : {}),
    },
    errors,
  };
}
