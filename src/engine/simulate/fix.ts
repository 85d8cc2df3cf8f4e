// Self-fixing (docs/self-simulation.md#fixing): a candidate the simulation says
// fails a public test is shown its failures and asked for a fixed program, up to
// T turns — with simulated feedback (the model's own predicted output, as
// Self-RLEF) or real feedback (the actual output, the executor's oracle). Every
// program it writes is really run on the public and hidden tests, and predicted
// again for the next turn, on the same roads as the first candidates.
import { fencedBlocks } from '../synthesize/answer';
import type { AnswerSource } from '../synthesize/pipeline';
import type { Candidate, Problem } from './problem';
import type { CandidateRuns } from './real';
import { runPrograms } from './real';
import type { CandidateReport, ProblemReport, SimulateReport } from './report';
import { predictPrograms, type OutputTruth, type PredictionOutcome, type SimulateDeps } from './predict';
import { scriptCall } from './templates';

export const FIX_PROMPT_VERSION = 'simulate-fix@1';
export type FeedbackKind = 'simulated' | 'real';

/** One failing public test as the fixer is told it. */
export interface Failure {
  test: number;
  /** What the program returned / printed (by the model's prediction or the real run). */
  got: string;
  /** The real run did not finish: `got` says how it ended (`raised ValueError: ...`, `limit steps`). */
  ended?: boolean;
}

/** The chat turn asking for a fixed program. */
export function fixMessages(problem: Problem, code: string, failures: readonly Failure[], kind: FeedbackKind) {
  const lines = failures.map((f) => {
    const t = problem.public[f.test]!;
    const [what, should, did] =
      problem.kind === 'function'
        ? [(t as { call: string }).call, `return ${t.expected}`, kind === 'real' ? 'it returned' : 'it returns']
        : [scriptCall((t as { stdin: string }).stdin), `print ${JSON.stringify(t.expected)}`, kind === 'real' ? 'it printed' : 'it prints'];
    return `- ${what} should ${should}, but ${f.ended ? 'the run ended with' : did}: ${f.got}`;
  });
  const user =
    `Task: ${problem.statement}\n\nThis program is meant to solve it:\n\n\`\`\`python\n${code.replace(/\n$/, '')}\n\`\`\`\n\n` +
    `${kind === 'real' ? 'Running it on the public tests gave' : 'Simulating it on the public tests gives'}:\n${lines.join('\n')}\n\n` +
    'Write the corrected program, the whole of it, in one ```python block.';
  return [{ role: 'user' as const, content: user }];
}

/** The program of a fixer's reply: its last python block (null: none). */
export function fixedProgram(text: string): string | null {
  const blocks = fencedBlocks(text.replace(/\r\n?/g, '\n')).filter((b) => ['', 'python', 'py', 'python3'].includes(b.lang));
  const last = blocks.at(-1);
  return last && last.body.trim() ? `${last.body.replace(/\s+$/, '')}\n` : null;
}

type FixTurn = NonNullable<CandidateReport['fixing']>['simulated'][number];

interface State {
  code: string;
  predictions: PredictionOutcome[];
  runs: CandidateRuns;
}

function failures(problem: Problem, state: State, kind: FeedbackKind): Failure[] {
  return problem.public.flatMap((_t, i) => {
    if (kind === 'simulated') {
      const p = state.predictions[i]!;
      return p.simulated_pass ? [] : [{ test: i, got: p.answer ?? '(no prediction)' }];
    }
    const run = state.runs.tests.find((t) => t.split === 'public' && t.index === i)!;
    if (run.passed) return [];
    if (!run.truth) return [{ test: i, got: run.actual, ended: true }];
    return [{ test: i, got: problem.kind === 'script' ? JSON.stringify(run.actual) : run.actual }];
  });
}

/**
 * Up to `turns` fixing turns of one candidate with one kind of feedback.
 * Stops early once its feedback finds no failing public test. A reply
 * without a program is a turn whose program is unchanged (`code: null`).
 */
export async function fixCandidate(
  deps: SimulateDeps,
  source: AnswerSource,
  problem: Problem,
  candidate: Candidate,
  start: State,
  kind: FeedbackKind,
  turns: number,
  expected: readonly OutputTruth[],
): Promise<FixTurn[]> {
  const out: FixTurn[] = [];
  let state = start;
  for (let turn = 1; turn <= turns; turn++) {
    const failing = failures(problem, state, kind);
    if (failing.length === 0) break;
    const reply = await source.answer(fixMessages(problem, state.code, failing, kind), deps.signal);
    const code = fixedProgram(reply.texts[0] ?? '');
    if (code !== null) {
      const program = { id: `${candidate.id}.fix-${kind}-${turn}`, code };
      const [runs] = await runPrograms(deps.pool, deps.judge, problem, [program], deps.signal);
      const [predictions] = await predictPrograms(deps, problem, [program], [runs!], expected);
      state = { code, predictions: predictions!, runs: runs! };
    }
    out.push({
      turn,
      code,
      simulated_public: state.predictions.every((p) => p.simulated_pass),
      real_public: state.runs.realPublic,
      real_hidden: state.runs.realHidden,
    });
  }
  return out;
}

type FixSummary = NonNullable<SimulateReport['summary']['fixing']>;

/**
 * Per feedback kind and turn 1..turns, over every candidate fixing started
 * from: fixed / broken / unchanged against its start (solves = real public
 * and hidden); a candidate that stopped before turn t counts with its last program.
 */
export function summarizeFixing(problems: readonly ProblemReport[], turns: number): FixSummary {
  const started = problems.flatMap((p) => p.candidates.filter((c) => c.fixing));
  const per = (kind: FeedbackKind) =>
    Array.from({ length: turns }, (_x, i) => {
      const turn = i + 1;
      const counts = { turn, fixed: 0, broken: 0, unchanged: 0 };
      for (const c of started) {
        const before = c.real_public && c.real_hidden;
        const last = c.fixing![kind].filter((t) => t.turn <= turn).at(-1);
        const now = last ? last.real_public && last.real_hidden : before;
        if (now && !before) counts.fixed++;
        else if (before && !now) counts.broken++;
        else counts.unchanged++;
      }
      return counts;
    });
  return { simulated: per('simulated'), real: per('real') };
}
