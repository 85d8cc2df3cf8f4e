// Questions → prompts for one ask: the seed policy, the question options each
// template gets, and the rendered prompts with what judging them needs (ground
// truth, the reference answer, the baseline's view of each question).
import type { GroundTruth, RewardOptions } from '../judge/schema';
import { baselineQuestion } from '../model/baseline';
import type { BaselineQuestion } from '../model/provider';
import { renderPrompts, type RenderContext, type RenderedPrompt, type Template } from '../model/templates';
import { generateQuestions, type QuestionOptions } from '../questions/generate';
import { liveQuestions } from '../live/questions';
import { nextStepQuestions } from '../questions/next-step';
import { seedFrom } from '../questions/rng';
import type { Question } from '../questions/schema';
import { referenceAnswer, toGroundTruth } from '../questions/truth';
import { decodeTrace, type DecodedTrace } from '../trace/decode';
import type { Entry, Trace } from '../trace/schema';

/**
 * What to ask about: the whole call, the next step at the `line` event `step`
 * (a debugger's cursor), or the next step at a live session's stop (`step` of
 * engine/live's one-stop trace: the truth is not run yet, so its prompts are
 * answered here and judged by engine/live when the session stops again).
 */
export type AskTarget = { kind: 'call' } | { kind: 'step'; step: number } | { kind: 'live'; step: number };

/** One prompt, ready to send and to judge. */
export interface AskPrompt extends RenderedPrompt {
  /** The baseline's view of each question (a model ignores it), in prompt order. */
  baseline: BaselineQuestion[];
  /** What the judge's reward op reads (with the reward options, when given). */
  groundTruth: GroundTruth;
  /** The ideal response text (the SFT target). */
  reference: string;
}

export interface PreparedAsk {
  target: AskTarget;
  /** `name@version` of the template. */
  template: string;
  seed: number;
  /** Every question generated for the target, before the template picks its kinds. */
  questions: Question[];
  prompts: AskPrompt[];
}

export type AskErrorCode = 'not_a_line' | 'nothing_to_ask';

/** The target cannot be asked about; `message` says what to do instead. */
export class AskError extends Error {
  constructor(
    readonly code: AskErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AskError';
  }
}

function entryText(entry: Entry): string {
  switch (entry.kind) {
    case 'call':
      return entry.expr;
    case 'function':
      return `${entry.target}(${entry.args})`;
    case 'script':
      return `<script>${JSON.stringify(entry.args)}`;
  }
}

/**
 * The seed policy, the one every caller uses: FNV-1a (`seedFrom`) of the
 * traced program's source, a NUL, and the entry as written (`f([1, 2])`).
 * The same call of the same code gets the same questions from the editor,
 * `execverify ask`, a harvest and the benchmarks, on every machine; the
 * next-step set at a cursor uses the same seed.
 */
export function questionSeed(trace: Trace): number {
  return seedFrom(`${trace.files[0]?.source ?? ''}\u0000${entryText(trace.entry)}`);
}

/** The question-option policy: what the generator asks for a template (the kinds it asks, ExecVerify's caps). */
export function questionOptions(template: Template, seed: number): QuestionOptions {
  const kinds = new Set(template.kinds);
  return {
    seed,
    output: kinds.has('output'),
    input: kinds.has('input') && !kinds.has('output'),
    maxNextLine: kinds.has('next_line') ? 5 : 0,
    maxState: kinds.has('state') ? 5 : 0,
    maxStateAny: kinds.has('state_any') ? 2 : 0,
    maxCoverage: kinds.has('coverage') ? 2 : 0,
    // Next-line answers are source text in the line formats, numbers in JSON.
    textMatchedNextLine: template.format !== 'next_step_json',
  };
}

const decodedCache = new WeakMap<Trace, DecodedTrace>();
/** A trace decoded once, however often it is asked about (the editor asks about one run many times). */
export function decoded(trace: Trace): DecodedTrace {
  let d = decodedCache.get(trace);
  if (!d) {
    d = decodeTrace(trace);
    decodedCache.set(trace, d);
  }
  return d;
}

function entryCall(trace: Trace): string | undefined {
  return trace.entry.kind === 'call' ? trace.entry.expr : undefined;
}

/** Where the program is stopped, for the next-step prompt: the line, its text, its run count and the locals there. */
function stopContext(trace: Trace, d: DecodedTrace, step: number, questions: readonly Question[]): RenderContext {
  const at = d.steps[step]!;
  const locals = Object.entries(d.locals(step))
    .map(([name, v]) => `${name} = ${v.repr.length > 200 ? `${v.repr.slice(0, 200)}…` : v.repr}`)
    .join(', ');
  const k = questions.find((q) => q.kind === 'next_line' || q.kind === 'state');
  const source = trace.files[at.file]?.source ?? '';
  return {
    code: source,
    ...(trace.language ? { language: trace.language } : {}),
    call: entryCall(trace),
    stop: { line: at.line, lineText: (source.split('\n')[at.line - 1] ?? '').trim(), k: k && 'k' in k ? k.k : 1, locals: locals || '(none)' },
  };
}

/**
 * The questions about `target` and the prompts `template` makes of them.
 * `seed` overrides the policy (`execverify ask --question-seed`); `reward`
 * goes into every prompt's ground truth.
 */
export function prepareAsk(trace: Trace, template: Template, target: AskTarget, options: { seed?: number; reward?: RewardOptions } = {}): PreparedAsk {
  const d = decoded(trace);
  const seed = options.seed ?? questionSeed(trace);
  const policy = questionOptions(template, seed);
  let questions: Question[];
  let ctx: RenderContext;
  if (target.kind !== 'call') {
    const at = d.steps[target.step];
    if (!at || at.event !== 'line') {
      throw new AskError('not_a_line', `Step ${target.step} is a “${at?.event ?? 'missing'}” event, not a line: step to a line of code, then predict.`);
    }
    questions =
      target.kind === 'live'
        ? liveQuestions(trace, target.step, seed, d.locals(target.step))
        : nextStepQuestions(trace, target.step, { seed, textMatchedNextLine: policy.textMatchedNextLine }, d);
    if (questions.length === 0)
      throw new AskError('nothing_to_ask', `Nothing can be asked at step ${target.step}: the run ended (a limit?) before the next step was recorded.`);
    ctx = stopContext(trace, d, target.step, questions);
  } else {
    questions = generateQuestions(trace, policy);
    ctx = { code: trace.files[0]?.source ?? '', ...(trace.language ? { language: trace.language } : {}), call: entryCall(trace) };
  }
  const { prompts } = renderPrompts(template, questions, ctx);
  return {
    target,
    template: `${template.name}@${template.version}`,
    seed,
    questions,
    prompts: prompts.map((p) => ({
      ...p,
      baseline: p.questions.map((q) => baselineQuestion(d, q)),
      groundTruth: toGroundTruth(p.questions, p.format, options.reward ? { reward: options.reward } : {}),
      reference: referenceAnswer(p.questions, p.format),
    })),
  };
}
