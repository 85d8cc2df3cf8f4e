// A question's truth in another run of the same call (SEMANTICS §7): the same
// program under another hash seed, or run a second time, must give every
// asked question the same answer, or the question teaches noise.
import { decodeTrace } from '../trace/decode';
import type { Trace } from '../trace/schema';
import {
  coverageQuestions,
  frameContext,
  inputQuestion,
  nextLineQuestion,
  nilQuestions,
  outputQuestion,
  stateAnyQuestions,
  stateQuestion,
  type FrameContext,
  type Run,
} from './generate';
import type { Question, WhiteBoxQuestion } from './schema';

/** One other run, indexed for looking questions up in it. */
interface OtherRun {
  trace: Trace;
  ctx: FrameContext | undefined;
  runs: Map<string, Run>;
  any?: Map<string, Question>;
  nil?: Map<string, Question>;
  coverage?: Map<string, Question>;
}

function indexRun(trace: Trace, frameFn: string | undefined): OtherRun {
  const decoded = decodeTrace(trace);
  // The frame asked about is the entry frame in both runs (same call, same code).
  const ctx = frameContext(trace, undefined, decoded);
  const runs = new Map<string, Run>();
  if (ctx && (frameFn === undefined || ctx.frame.fn === frameFn)) for (const r of ctx.runs) runs.set(`${r.line}:${r.k}`, r);
  return { trace, ctx: ctx && (frameFn === undefined || ctx.frame.fn === frameFn) ? ctx : undefined, runs };
}

const byId = (qs: Question[]) => new Map(qs.map((q) => [q.id, q] as const));

/** The truth `q` has in `other`, or undefined when it cannot be asked there. */
function truthIn(other: OtherRun, q: Question): unknown {
  switch (q.kind) {
    case 'output':
      return outputQuestion(other.trace)?.truth;
    case 'input':
      return inputQuestion(other.trace)?.truth;
    default:
      break;
  }
  const ctx = other.ctx;
  if (!ctx) return undefined;
  switch (q.kind) {
    case 'next_line': {
      const run = other.runs.get(`${q.line}:${q.k}`);
      return run && nextLineQuestion(ctx, run, false)?.truth;
    }
    case 'state': {
      if ('nil' in q.truth) return (other.nil ??= byId(nilQuestions(ctx))).get(q.id)?.truth;
      const run = other.runs.get(`${q.line}:${q.k}`);
      return run && stateQuestion(ctx, run, q.var)?.truth;
    }
    case 'state_any':
      return (other.any ??= byId(stateAnyQuestions(ctx))).get(q.id)?.truth;
    case 'coverage':
      return (other.coverage ??= byId(coverageQuestions(ctx))).get(q.id)?.truth;
  }
}

/** Truths compare as values: a set's values may come in another order. */
function sameTruth(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return false;
  const norm = (t: unknown): string => {
    if (t && typeof t === 'object' && 'values' in t && Array.isArray((t as { values: unknown[] }).values)) {
      return JSON.stringify((t as { values: unknown[] }).values.map((v) => JSON.stringify(v)).sort());
    }
    return JSON.stringify(t);
  };
  return norm(a) === norm(b);
}

/**
 * A predicate for `generateQuestions({confirm})`: true when the question has
 * the same truth in every one of `others` (other runs of the same call).
 */
export function confirmIn(others: readonly Trace[], frameFn?: string): (q: Question) => boolean {
  const runs = others.map((t) => indexRun(t, frameFn));
  return (q) => runs.every((r) => sameTruth(truthIn(r, q), q.truth));
}

/** The questions of `questions` whose truth differs in (or cannot be asked of) `other`. */
export function movedQuestions(questions: readonly Question[], other: Trace): Question[] {
  const fn = questions.find((q): q is WhiteBoxQuestion => 'fn' in q)?.fn;
  const confirm = confirmIn([other], fn);
  return questions.filter((q) => !confirm(q));
}
