// "Predict next step" in a live debug session: ask at one stop, judge at the
// next. The asked stop becomes a one-frame trace (a `call` at the frame's
// `def` with its locals, then the `line` event of the stop), asked through
// the one ask road (prepareAsk's `live` target); when the session stops again
// in that frame — or the frame is gone — the observed transition is appended
// as the frame's next event, and the questions are rebuilt from that trace by
// the question generator's own truth rules (SEMANTICS §2: step over; callee
// frames in between do not count) and judged by the one judge.
import { answerPrompt, judgeAnswers, prepareAsk, type AnsweredPrompt, type PreparedAsk } from '../ask';
import type { SampleInput } from '../dataset/record';
import { buildSample } from '../dataset/sample';
import type { JudgeClient } from '../judge/client';
import type { Verdict } from '../judge/schema';
import { groundTruthString } from '../judge/schema';
import type { Provider } from '../model/provider';
import { asMessages } from '../model/prompt';
import type { Template } from '../model/templates';
import { frameContext, nextLineQuestion, stateQuestion } from '../questions/generate';
import { seedFrom } from '../questions/rng';
import type { Question } from '../questions/schema';
import { referenceAnswer, toGroundTruth } from '../questions/truth';
import { TRACE_SCHEMA_VERSION, type Step, type Trace, type Value } from '../trace/schema';
import { findFrame, type LiveStop } from './stop';

/** The step of the one-stop trace that is asked about. */
const ASKED = 1;
const UNREAD: Value = { repr: '<not read through the debugger>', type: 'unknown', literal: false, truncated: true };

/** How the session was resumed after the ask (the DAP request): only steps keep the next step observable. */
export type Resume = 'next' | 'stepIn' | 'stepOut' | 'continue' | 'other';

export interface LiveAsk {
  stop: LiveStop;
  /** The one-stop trace the questions were built from. */
  trace: Trace;
  prepared: PreparedAsk;
  answered: AnsweredPrompt[];
}

/** One question's outcome: judged right or wrong, or unknown (its truth could not be read exactly). */
export type LiveResult = { status: 'right' | 'wrong'; verdict: Verdict } | { status: 'unknown'; why: string };

export interface LiveJudged {
  ask: LiveAsk;
  /** The asked frame's next event as observed: the line it went to, or its return (-1). */
  next: number;
  /** The trace of the transition (call, the asked line, its next event): the ground truth's source. */
  trace: Trace;
  /** The asked questions with their truth, where it is exact (in prompt order; undefined: unknown). */
  questions: (Question | undefined)[];
  /** Per prompt, per sample, per question. */
  results: LiveResult[][][];
}

function files(stop: LiveStop) {
  return [{ path: stop.path, source: stop.source }];
}

/**
 * The one-stop trace of `stop`: the frame's `call` (its locals as they are
 * now) and the `line` event it stopped at. A stop read through lldb is C: the
 * questions and the judge take C's rules from the trace's language.
 */
export function liveTrace(stop: LiveStop, python = 'unknown'): Trace {
  const common = { frame: 0, fn: stop.fn, file: 0, depth: 0 };
  const runtime =
    stop.adapter === 'lldb'
      ? { language: 'c' as const, runtime: { compiler: 'unknown (built by the user)', debugger: 'lldb', isolation: 'none' as const } }
      : { python: { version: python, implementation: 'unknown', backend: 'settrace' as const, isolation: 'none' as const } };
  return {
    schema: TRACE_SCHEMA_VERSION,
    ...runtime,
    entry: { kind: 'call', expr: stop.fn },
    files: files(stop),
    steps: [
      { i: 0, event: 'call', parent: null, line: stop.first, set: stop.locals, ...common },
      { i: ASKED, event: 'line', line: stop.line, ...common },
    ],
    outcome: { kind: 'limit', limit: 'steps', message: 'a live debug session: one observed transition' },
    stdout: { text: '', truncated: true },
    stderr: { text: '', truncated: true },
    stats: { events: 2, wallMs: 0 },
  };
}

/** The seed policy for a live stop: FNV-1a of the source, the function and the line (as questionSeed, with the stop in place of the entry). */
export function liveSeed(stop: LiveStop): number {
  return seedFrom(`${stop.source}\u0000${stop.fn}\u0000${stop.line}`);
}

/** Ask at `stop`: the questions by the live policy, each prompt answered by `provider` (not judged: the truth has not run yet). */
export async function askLive(
  stop: LiveStop,
  template: Template,
  options: { provider: Provider; samples?: number; signal?: AbortSignal; python?: string },
): Promise<LiveAsk> {
  if (stop.first <= 0 || stop.fn === '<module>') throw new Error('Predict next step works inside a function: step into one, then predict.');
  const trace = liveTrace(stop, options.python);
  const prepared = prepareAsk(trace, template, { kind: 'live', step: ASKED }, { seed: liveSeed(stop) });
  const answered: AnsweredPrompt[] = [];
  for (const p of prepared.prompts) answered.push(await answerPrompt(options.provider, p, { samples: options.samples, signal: options.signal }));
  return { stop, trace, prepared, answered };
}

/**
 * Follows the session after an ask until the asked frame's next event is
 * seen: `resumed` with each request that resumes it, `stopped` with each
 * stop, which answers "wait" (the frame is deeper in a call, or back on the
 * line of that call at debugpy's return stop) or the judged transition.
 */
export class LiveTransition {
  private deeper = false;
  /** Why the next step cannot be known exactly (the program ran on past it), once it cannot. */
  private lost: string | undefined;

  constructor(readonly ask: LiveAsk) {}

  resumed(how: Resume): void {
    const ok = this.deeper ? how === 'next' || how === 'stepIn' || how === 'stepOut' : how === 'next' || how === 'stepIn';
    if (!ok && !this.lost) this.lost = `the session was resumed with “${how}”, so more than the next step may have run`;
  }

  async stopped(stop: LiveStop, reason: string, judge: JudgeClient, signal?: AbortSignal): Promise<LiveJudged | 'wait'> {
    const asked = this.ask.stop;
    const at = findFrame(stop, asked);
    if (at > 0) {
      this.deeper = true;
      return 'wait';
    }
    if (at === 0 && this.deeper && stop.line === asked.line) return 'wait'; // the callee returned; line L goes on
    let event: Step;
    const common = { i: 2, frame: 0, fn: asked.fn, file: 0, depth: 0 };
    if (reason === 'exception') {
      this.lost ??= 'the line raised an exception';
      event = { ...common, event: 'exception', line: asked.line, exc: { type: 'unknown', message: '' } };
    } else if (at === 0) {
      event = { ...common, event: 'line', line: stop.line, ...changes(asked.locals, stop.exact ? stop.locals : unread(stop.locals)) };
    } else {
      // Gone: it returned. Its locals at the return are exact only at debugpy's return stop in its caller.
      const returnedHere = stop.callee !== undefined && stop.frames[0]?.id === asked.frames[1]?.id;
      const after = returnedHere && stop.exact ? stop.callee! : unread(asked.locals);
      event = { ...common, event: 'return', line: asked.line, ...changes(asked.locals, after) };
    }
    const trace: Trace = { ...this.ask.trace, steps: [...this.ask.trace.steps, event], stats: { events: 3, wallMs: 0 } };
    return judgeTransition(this.ask, trace, this.lost, judge, signal);
  }
}

function unread(locals: Record<string, Value>): Record<string, Value> {
  return Object.fromEntries(Object.keys(locals).map((n) => [n, UNREAD]));
}

/** The diff of one frame's locals between two events, as a trace step carries it. */
function changes(before: Record<string, Value>, after: Record<string, Value>): Pick<Step, 'set' | 'del'> {
  const set: Record<string, Value> = {};
  for (const [n, v] of Object.entries(after)) if (JSON.stringify(before[n]) !== JSON.stringify(v)) set[n] = v;
  const del = Object.keys(before).filter((n) => !(n in after));
  return { ...(Object.keys(set).length ? { set } : {}), ...(del.length ? { del } : {}) };
}

async function judgeTransition(ask: LiveAsk, trace: Trace, lost: string | undefined, judge: JudgeClient, signal?: AbortSignal): Promise<LiveJudged> {
  const ctx = frameContext(trace, 0);
  const run = ctx?.runs.find((r) => r.step === ASKED);
  const rebuild = (q: Question): Question | undefined => {
    if (lost || !ctx || !run) return undefined;
    if (q.kind === 'next_line') return nextLineQuestion(ctx, run, ask.prepared.prompts[0]?.format !== 'next_step_json');
    return q.kind === 'state' ? stateQuestion(ctx, run, q.var) : undefined;
  };
  const questions = ask.prepared.questions.map(rebuild);
  const byId = new Map(ask.prepared.questions.map((q, i) => [q.id, questions[i]] as const));
  const results: LiveResult[][][] = [];
  for (const answered of ask.answered) {
    const asked = answered.prompt.questions;
    const known = asked.map((q) => byId.get(q.id));
    const judged = known.flatMap((q) => (q ? [q] : []));
    const perSample: LiveResult[][] = [];
    for (const s of answered.samples) {
      const answers = asked.flatMap((_q, i) => (known[i] ? [s.parsed.answers[i] ?? null] : []));
      const verdicts = judged.length ? await judgeAnswers(judge, { ...answered.prompt, questions: judged }, answers, signal) : [];
      let j = 0;
      perSample.push(
        known.map((q): LiveResult => {
          if (!q) return { status: 'unknown', why: lost ?? 'the value after the line could not be read exactly' };
          const verdict = verdicts[j++]!;
          return { status: verdict.correct ? 'right' : 'wrong', verdict };
        }),
      );
    }
    results.push(perSample);
  }
  const next = run?.next ?? 0;
  return { ask, next, trace, questions, results };
}

/**
 * The dataset sample of a judged transition (the editor's "Add to dataset"):
 * the questions with their observed truth (every one exact) and the first
 * prompt's messages; provenance `truth: "live-transition"` says its truth
 * is one observed transition of a live session, not a whole trace.
 */
export function liveSample(judged: LiveJudged, where: { project: string; file: string }): SampleInput {
  const prompt = judged.ask.answered[0]?.prompt;
  if (!prompt) throw new Error('nothing was asked at this stop');
  // The prompt asks every question: a sample whose truth misses one would train on an unjudgeable answer.
  const questions = judged.questions.filter((q): q is Question => q !== undefined);
  if (questions.length !== judged.questions.length)
    throw new Error('some answers of this step could not be judged exactly (unknown): it cannot become a sample');
  const stop = judged.ask.stop;
  return buildSample({
    provenance: {
      project: where.project,
      repository: null,
      commit: null,
      file: where.file,
      function: stop.fn,
      line: stop.first,
      license: null,
      test: null,
      truth: 'live-transition',
    },
    code: stop.source,
    entry: stop.fn,
    result: { repr: '<a live transition: no call result>', type: 'unknown' },
    trace: judged.trace,
    questions,
    groundTruth: groundTruthString(toGroundTruth(questions, prompt.format)),
    prompt: asMessages(prompt.prompt),
    reference: referenceAnswer(questions, prompt.format),
  });
}
