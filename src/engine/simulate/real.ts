// The truth of self-simulation: every candidate really run on every test under
// the tracer (the same sandboxed TracerPool as every trace), and whether it
// passed decided by the Python judge — a function's return value against the
// test's expected literal, a script's printed text under the stdout rule.
import type { JudgeClient, JudgeItem } from '../judge/client';
import type { TracerError, TracerPool, TraceJob } from '../trace/runner';
import type { Limits, Trace } from '../trace/schema';
import type { Candidate, Problem, Split } from './problem';

/** Candidates are untrusted and may loop: every run is bounded (a limit is a failed test). */
export const RUN_LIMITS: Limits = { steps: 200_000, wallTimeMs: 5_000, cpuTimeMs: 5_000, outputBytes: 100_000 };

/** The judge's truth for a prediction of this run: the returned value, or the printed text. */
export type RunTruth = { value: NonNullable<Extract<Trace['outcome'], { kind: 'returned' }>['value']> } | { scorer: 'stdout'; expected: string };

export interface TestRun {
  split: Split;
  /** Index of the test in its split. */
  index: number;
  passed: boolean;
  /** What the run returned (repr) or printed, or how it ended (`raised ValueError: ...`, `limit steps`). */
  actual: string;
  /** What a prediction of this run is judged against; absent when the run did not return (raised, a limit, …). */
  truth?: RunTruth;
}

export interface CandidateRuns {
  candidate: string;
  tests: TestRun[];
  /** It really passes every public test / every hidden test. */
  realPublic: boolean;
  realHidden: boolean;
}

/** The trace job of one program on one test of `problem`. */
export function testJob(problem: Problem, code: string, name: string, split: Split, index: number): TraceJob {
  const base = { source: code, path: `${problem.id}/${name}.py`, limits: RUN_LIMITS };
  if (problem.kind === 'function') return { ...base, entry: { kind: 'call', expr: problem[split][index]!.call } };
  return { ...base, entry: { kind: 'script', args: [] }, stdin: problem[split][index]!.stdin };
}

function ending(trace: Trace): string {
  const o = trace.outcome;
  switch (o.kind) {
    case 'returned':
      return o.value.repr;
    case 'raised':
      return `raised ${o.type}: ${o.message}`;
    case 'exited':
      return `exited ${o.code}`;
    case 'limit':
      return `limit ${o.limit}`;
    default:
      return o.kind;
  }
}

/** The run's truth for predictions, when it ran to its end (a script: returned or exit 0, its output whole). */
export function runTruth(problem: Problem, trace: Trace): RunTruth | undefined {
  const o = trace.outcome;
  if (problem.kind === 'function') return o.kind === 'returned' ? { value: o.value } : undefined;
  const finished = o.kind === 'returned' || (o.kind === 'exited' && o.code === 0);
  return finished && !trace.stdout.truncated ? { scorer: 'stdout', expected: trace.stdout.text } : undefined;
}

/**
 * Every program of `programs` on every public and hidden test of `problem`:
 * traced in one batch, judged in one batch. A run that could not be made (a
 * syntax error in a candidate) fails its tests, with the reason as `actual`.
 */
export async function runPrograms(
  pool: TracerPool,
  judge: JudgeClient,
  problem: Problem,
  programs: readonly Candidate[],
  signal?: AbortSignal,
): Promise<CandidateRuns[]> {
  const sites: { program: number; split: Split; index: number }[] = [];
  programs.forEach((_c, program) => {
    for (const split of ['public', 'hidden'] as const) problem[split].forEach((_t, index) => sites.push({ program, split, index }));
  });
  const traces = await pool.traceMany(
    sites.map((s) => testJob(problem, programs[s.program]!.code, programs[s.program]!.id, s.split, s.index)),
    signal,
  );
  const items: JudgeItem[] = [];
  const judged: number[] = []; // site index of each judge item
  const truths = traces.map((t) => (isTrace(t) ? runTruth(problem, t) : undefined));
  sites.forEach((s, i) => {
    const truth = truths[i];
    if (!truth) return;
    const test = problem[s.split][s.index]!;
    judged.push(i);
    // The test's expectation is the answer, the real run the truth: the judge's rules (Python ==, float tolerance, the stdout rule).
    if ('value' in truth) items.push({ kind: 'output', answer: test.expected, truth });
    else items.push({ kind: 'output', answer: JSON.stringify((test as { expected: string }).expected), truth });
  });
  const verdicts = items.length ? await judge.judgeBatch(items, undefined, signal) : [];
  const passed = new Array<boolean>(sites.length).fill(false);
  judged.forEach((site, j) => (passed[site] = verdicts[j]!.correct));
  return programs.map((c, program) => {
    const tests: TestRun[] = [];
    sites.forEach((s, i) => {
      if (s.program !== program) return;
      const t = traces[i]!;
      const actual = isTrace(t) ? (problem.kind === 'script' && truths[i] ? t.stdout.text : ending(t)) : `not run: ${t.message}`;
      tests.push({ split: s.split, index: s.index, passed: passed[i]!, actual, ...(truths[i] ? { truth: truths[i] } : {}) });
    });
    return {
      candidate: c.id,
      tests,
      realPublic: tests.filter((t) => t.split === 'public').every((t) => t.passed),
      realHidden: tests.filter((t) => t.split === 'hidden').every((t) => t.passed),
    };
  });
}

function isTrace(t: Trace | TracerError): t is Trace {
  return !(t instanceof Error);
}
