// DIR/report.json of `execverify simulate` (one schema, read back by tests and
// by anyone comparing runs) and DIR/report.md, its tables for people.
import { z } from 'zod';
import { REPORT_SCHEMA_VERSION, type ReportInput } from '../report';

export const SIMULATE_REPORT_VERSION = 'execverify.simulate/1';

const rate = z.number().min(0).max(1);

export const PredictionSchema = z.object({
  /** Index of the public test. */
  test: z.number().int().nonnegative(),
  /** The model's answer as parsed (null: none could be read, or the request failed). */
  answer: z.string().nullable(),
  /** The answer equals the test's expected output: the model predicts this test passes. */
  simulated_pass: z.boolean(),
  /** The answer equals what the run really returned / printed (null: the run did not finish, nothing to compare). */
  prediction_right: z.boolean().nullable(),
  /** The provider failed for this prompt (the prediction counts as a failed test). */
  error: z.string().optional(),
});

export const TestResultSchema = z.object({
  split: z.enum(['public', 'hidden']),
  test: z.number().int().nonnegative(),
  passed: z.boolean(),
  /** What the run returned (repr) or printed, or how it ended. */
  actual: z.string(),
});

export const FixTurnSchema = z.object({
  turn: z.number().int().positive(),
  /** The program the model wrote this turn (null: no program could be read from its reply). */
  code: z.string().nullable(),
  simulated_public: z.boolean(),
  real_public: z.boolean(),
  real_hidden: z.boolean(),
});

export const CandidateReportSchema = z.object({
  id: z.string(),
  simulated_public: z.boolean(),
  real_public: z.boolean(),
  real_hidden: z.boolean(),
  /** The problem file's label, when it has one. */
  label: z.object({ public: z.boolean(), hidden: z.boolean() }).optional(),
  predictions: z.array(PredictionSchema),
  tests: z.array(TestResultSchema),
  /**
   * Self-fixing (--turns T), for candidates simulated to fail a public test: per feedback kind, the turns
   * taken. Simulated feedback stops once the simulation says every public test passes, real feedback once the
   * real runs do.
   */
  fixing: z.object({ simulated: z.array(FixTurnSchema), real: z.array(FixTurnSchema) }).optional(),
});
export type CandidateReport = z.infer<typeof CandidateReportSchema>;

const SelectionSchema = z.object({ random: rate, simulated: rate, oracle: rate });

export const ProblemReportSchema = z.object({
  id: z.string(),
  kind: z.enum(['function', 'script']),
  candidates: z.array(CandidateReportSchema),
  selection: SelectionSchema,
});
export type ProblemReport = z.infer<typeof ProblemReportSchema>;

/**
 * Per turn t and feedback kind, over the candidates fixing started from (a candidate that stopped earlier keeps
 * its last program): how many solve the problem now but did not at the start, the reverse, and neither changed.
 */
export const FixTurnSummarySchema = z.object({
  turn: z.number().int().positive(),
  /** Solved (real public + hidden) now, not at the start. */
  fixed: z.number().int().nonnegative(),
  /** Solved at the start, not now. */
  broken: z.number().int().nonnegative(),
  /** The same as at the start. */
  unchanged: z.number().int().nonnegative(),
});

export const SimulateReportSchema = z.object({
  schema: z.literal(SIMULATE_REPORT_VERSION),
  /** Who predicted: a model's label, or "baseline" (trivial answers, never a model). */
  provider: z.object({ kind: z.enum(['model', 'baseline']), label: z.string() }),
  templates: z.array(z.string()),
  problems_file: z.string(),
  k: z.number().int().positive().nullable(),
  turns: z.number().int().nonnegative(),
  problems: z.array(ProblemReportSchema),
  summary: z.object({
    problems: z.number().int().nonnegative(),
    candidates: z.number().int().nonnegative(),
    pass_at_1: SelectionSchema,
    gap: z.number(),
    correct_rejected: rate.nullable(),
    wrong_accepted: rate.nullable(),
    /** Predictions equal to the real run, over those that could be compared. */
    prediction_accuracy: rate.nullable(),
    predictions: z.number().int().nonnegative(),
    model_errors: z.number().int().nonnegative(),
    fixing: z.object({ simulated: z.array(FixTurnSummarySchema), real: z.array(FixTurnSummarySchema) }).optional(),
  }),
  /** Problems that could not be simulated, with why (the others still count). */
  errors: z.array(z.object({ problem: z.string(), message: z.string() })),
});
export type SimulateReport = z.infer<typeof SimulateReportSchema>;

const pct = (x: number | null) => (x === null ? '–' : `${(100 * x).toFixed(1)}%`);
const yes = (b: boolean) => (b ? 'yes' : 'no');

/** The report for people: the summary, per-problem selection, and each candidate's verdicts. */
export function renderReportMarkdown(report: SimulateReport): string {
  const s = report.summary;
  const who = report.provider.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : `model ${report.provider.label}`;
  const out: string[] = [
    '# Self-execution simulation',
    '',
    `Predictions by ${who}; templates ${report.templates.join(', ')}; problems ${report.problems_file}` +
      `${report.k ? `; k = ${report.k} candidates a problem` : ''}${report.turns ? `; up to ${report.turns} fixing turns` : ''}.`,
    '',
    '## Selection (pass@1 after choosing one candidate a problem)',
    '',
    '| rule | pass@1 |',
    '|---|---|',
    `| random (expected value) | ${pct(s.pass_at_1.random)} |`,
    `| simulated (the model's predictions on the public tests) | ${pct(s.pass_at_1.simulated)} |`,
    `| oracle (real public-test runs) | ${pct(s.pass_at_1.oracle)} |`,
    '',
    `Simulation gap (oracle − simulated): ${(100 * s.gap).toFixed(1)} points. ` +
      `Correct candidates rejected: ${pct(s.correct_rejected)}; wrong candidates accepted: ${pct(s.wrong_accepted)}. ` +
      `Predictions equal to the real run: ${pct(s.prediction_accuracy)} of ${s.predictions}` +
      `${s.model_errors ? `; ${s.model_errors} requests failed` : ''}. ` +
      `${s.problems} problems, ${s.candidates} candidates.`,
    '',
  ];
  if (s.fixing) {
    out.push('## Self-fixing', '', '| turn | feedback | fixed | broken | unchanged |', '|---|---|---|---|---|');
    for (const kind of ['simulated', 'real'] as const) {
      for (const t of s.fixing[kind]) out.push(`| ${t.turn} | ${kind} | ${t.fixed} | ${t.broken} | ${t.unchanged} |`);
    }
    out.push('');
  }
  out.push('## Problems', '', '| problem | kind | random | simulated | oracle |', '|---|---|---|---|---|');
  for (const p of report.problems) {
    out.push(`| ${p.id} | ${p.kind} | ${pct(p.selection.random)} | ${pct(p.selection.simulated)} | ${pct(p.selection.oracle)} |`);
  }
  out.push('', '## Candidates', '', '| problem | candidate | simulated public | real public | real hidden | predictions right |', '|---|---|---|---|---|---|');
  for (const p of report.problems) {
    for (const c of p.candidates) {
      const judged = c.predictions.filter((x) => x.prediction_right !== null);
      const right = judged.filter((x) => x.prediction_right).length;
      out.push(
        `| ${p.id} | ${c.id} | ${yes(c.simulated_public)} | ${yes(c.real_public)} | ${yes(c.real_hidden)} | ${judged.length ? `${right}/${judged.length}` : '–'} |`,
      );
    }
  }
  if (report.errors.length) {
    out.push('', '## Not simulated', '');
    for (const e of report.errors) out.push(`- ${e.problem}: ${e.message}`);
  }
  return out.join('\n') + '\n';
}

/**
 * The report as the evaluation report module (src/engine/report) reads it,
 * for DIR/report.html and its charts: the headline numbers, the share of
 * candidates each rule keeps right, predictions right by problem shape, and
 * the wrong predictions.
 */
export function evaluationReport(report: SimulateReport, created: string): ReportInput {
  const s = report.summary;
  const candidates = report.problems.flatMap((p) => p.candidates.map((c) => ({ p, c })));
  const passing = candidates.filter((x) => x.c.real_public);
  const failing = candidates.filter((x) => !x.c.real_public);
  const byKind = (kind: 'function' | 'script') => {
    const preds = candidates.filter((x) => x.p.kind === kind).flatMap((x) => x.c.predictions.filter((q) => q.prediction_right !== null));
    return { label: `${kind} problems`, n: preds.length, correct: preds.filter((q) => q.prediction_right).length };
  };
  const wrong = candidates.flatMap(({ p, c }) =>
    c.predictions
      .filter((q) => q.prediction_right === false)
      .map((q) => ({
        id: `${p.id}/${c.id}/public/${q.test}`,
        group: p.kind,
        answer: q.answer ?? '(no answer)',
        expected: c.tests.find((t) => t.split === 'public' && t.test === q.test)?.actual ?? '',
        reason: q.simulated_pass === c.tests.find((t) => t.split === 'public' && t.test === q.test)?.passed ? 'wrong output, right verdict' : 'wrong verdict',
      })),
  );
  return {
    schema: REPORT_SCHEMA_VERSION,
    title: 'Self-execution simulation',
    subtitle: `${report.provider.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : report.provider.label} on ${report.problems_file}: ${s.problems} problems, ${s.candidates} candidates`,
    created,
    metrics: [
      { name: 'pass@1 random', value: s.pass_at_1.random },
      { name: 'pass@1 simulated', value: s.pass_at_1.simulated },
      { name: 'pass@1 oracle', value: s.pass_at_1.oracle },
      { name: 'gap (oracle − simulated)', value: s.gap },
      { name: 'correct rejected', value: s.correct_rejected, n: passing.length },
      { name: 'wrong accepted', value: s.wrong_accepted, n: failing.length },
      { name: 'predictions right', value: s.prediction_accuracy, n: s.predictions },
    ],
    groups: [
      {
        name: 'What the simulation keeps right',
        about: 'candidates that really pass every public test and are accepted; candidates that really fail one and are rejected',
        rows: [
          { label: 'really pass: accepted', n: passing.length, correct: passing.filter((x) => x.c.simulated_public).length },
          { label: 'really fail: rejected', n: failing.length, correct: failing.filter((x) => !x.c.simulated_public).length },
        ],
      },
      { name: 'Predictions equal to the real run', rows: [byKind('function'), byKind('script')] },
    ],
    examples: wrong.slice(0, 50),
    notes: [`pass@1 per problem and candidate: report.json and report.md (${SIMULATE_REPORT_VERSION})`],
  };
}
