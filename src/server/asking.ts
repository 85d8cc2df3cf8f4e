// Asking and judging for the editor: LSP glue over the engine's one road
// (src/engine/ask) — the next-step questions at one step of a run and the
// mixed prompt for a whole call, answered by the model or the baseline and
// scored by the one judge; engine failures become EngineErrors that say what to do.
import {
  AskError,
  answerPrompt,
  judgeAnswers,
  parseReply,
  prepareAsk,
  rewardResponses,
  type AnsweredPrompt,
  type AskPrompt,
  type AskTarget,
  type PreparedAsk,
} from '../engine/ask';
import { JudgeProtocolError, type JudgeClient } from '../engine/judge/client';
import type { Verdict } from '../engine/judge/schema';
import { isModelError, type Provider } from '../engine/model';
import { asMessages } from '../engine/model/prompt';
import { BUILTIN_TEMPLATES, type Template } from '../engine/model/templates';
import type { Question } from '../engine/questions';
import type { Trace } from '../engine/trace/schema';
import {
  EngineError,
  type CallVerificationResult,
  type ModelAccess,
  type StepJudgement,
  type StepPredictionResult,
  type VerificationSample,
} from './engine-port';
import type { QuestionVerdict, Settings, ShownValue } from './protocol';

/** What asking needs from the live engine: who answers, and the judge. */
export interface Answering {
  answerer(access: ModelAccess): { provider: Provider; note: string | undefined };
  judge(settings: Settings): JudgeClient;
}

/** Model failures: an endpoint that is down or refuses says so, with the setting to check. */
export function fromModelError(e: unknown, settings: Settings): EngineError {
  if (e instanceof EngineError) return e;
  if (isModelError(e)) {
    if (e.code === 'aborted') return new EngineError('cancelled', 'cancelled');
    return new EngineError('endpoint_down', `The model endpoint ${settings.baseUrl} failed (${e.code}): ${e.message}`);
  }
  return new EngineError('internal', e instanceof Error ? e.message : String(e));
}

export function judgeFailure(e: unknown, signal: AbortSignal): EngineError {
  if (signal.aborted) return new EngineError('cancelled', 'cancelled');
  return new EngineError('internal', e instanceof JudgeProtocolError ? e.message : `The judge failed: ${e instanceof Error ? e.message : String(e)}`);
}

export function template(name: string): Template {
  const t = BUILTIN_TEMPLATES.find((x) => x.name === name);
  if (!t)
    throw new EngineError('bad_params', `Unknown template “${name}”. Use one of: ${BUILTIN_TEMPLATES.map((x) => x.name).join(', ')} (execverify.template).`);
  return t;
}

function prepared(trace: Trace, t: Template, target: AskTarget, settings?: Settings): PreparedAsk {
  try {
    return prepareAsk(trace, t, target, settings ? { reward: { alpha: settings.alpha, gating: settings.gating } } : {});
  } catch (e) {
    if (e instanceof AskError) throw new EngineError('bad_params', e.message);
    throw e;
  }
}

/** The one prompt of a whole-call ask with the editor's template (Verify whole call, Add to dataset). */
export function callPrompt(trace: Trace, settings: Settings, action: 'verify' | 'sample'): AskPrompt {
  if (trace.entry.kind !== 'call') {
    throw new EngineError(
      'bad_params',
      action === 'verify'
        ? 'Verify whole call needs a call entry such as f([1, 2]); this run is a script.'
        : 'Only call entries (such as f([1, 2])) can become samples; this run is a script.',
    );
  }
  const t = template(settings.template);
  const { prompts } = prepared(trace, t, { kind: 'call' }, settings);
  if (prompts.length !== 1) {
    if (action === 'sample') throw new EngineError('bad_params', `Template “${t.name}” cannot make one prompt for this run; use the execverify template.`);
    throw new EngineError(
      'bad_params',
      prompts.length === 0
        ? `Template “${t.name}” asks nothing about this run (no questions of its kinds). Try the execverify template.`
        : `Template “${t.name}” asks one question per prompt; Verify whole call needs a mixed template such as execverify (execverify.template).`,
    );
  }
  return prompts[0]!;
}

function shown(repr: string, type: string): ShownValue {
  return { value: repr, type };
}

export function truthText(q: Question): string {
  switch (q.kind) {
    case 'next_line':
      return q.truth.line === -1 ? '-1 (returns)' : `${q.truth.line}`;
    case 'state':
      return 'nil' in q.truth ? 'Nil' : `${q.truth.repr}; ${q.truth.type}`;
    case 'state_any':
      return q.truth.values.map((v) => v.repr).join(' | ') || 'Nil';
    case 'coverage':
      return q.truth.covered ? 'YES' : 'NO';
    case 'output':
      return 'value' in q.truth ? q.truth.value.repr : q.truth.expected;
    case 'input':
      return `any call returning ${q.outputRepr}`;
  }
}

function label(q: Question): string {
  switch (q.kind) {
    case 'next_line':
      return `next line after ${q.line}${q.k > 1 ? ` (run ${q.k})` : ''}`;
    case 'state':
      return `${q.var} after ${q.line}${q.k > 1 ? ` (run ${q.k})` : ''}`;
    case 'state_any':
      return `${q.var} after ${q.line} (any run)`;
    case 'coverage':
      return `line ${q.line} runs`;
    case 'output':
      return `output of ${q.call}`;
    case 'input':
      return `input for ${q.call}`;
  }
}

/** What was asked and what the model answered, as the editor shows it. */
function asked(q: Question, answer: string | null | undefined): Omit<QuestionVerdict, 'actual' | 'ok'> {
  return {
    kind: q.kind,
    line: 'line' in q ? q.line : 0,
    label: label(q),
    ...('var' in q ? { var: q.var } : {}),
    predicted: answer === null || answer === undefined ? '(no answer)' : answer,
  };
}

export function verdictOf(q: Question, answer: string | null | undefined, v: Verdict): QuestionVerdict {
  return { ...asked(q, answer), actual: truthText(q), ok: v.correct };
}

/** A question whose truth could not be read exactly (a live step): shown as unknown, never ✓ or ✗. */
export function unknownVerdict(q: Question, answer: string | null | undefined, why: string): QuestionVerdict {
  return { ...asked(q, answer), actual: 'unknown', ok: false, unknown: why };
}

export async function predictStep(engine: Answering, trace: Trace, step: number, access: ModelAccess, signal: AbortSignal): Promise<StepPredictionResult> {
  const rendered = prepared(trace, template('next-step'), { kind: 'step', step }).prompts[0];
  if (!rendered) throw new EngineError('internal', 'The next-step template asked nothing.');
  const { provider, note } = engine.answerer(access);
  let answered;
  try {
    answered = await answerPrompt(provider, rendered, { signal });
  } catch (e) {
    throw fromModelError(e, access.settings);
  }
  return shownPrediction(answered, provider, note);
}

/** A next-step answer as the editor shows it (replay and live): the next line, the values, who answered. */
export function shownPrediction(answered: AnsweredPrompt, provider: Provider, note: string | undefined): StepPredictionResult {
  const rendered = answered.prompt;
  const { reply, latencyMs } = answered;
  const parsed = answered.samples[0]?.parsed ?? parseReply(rendered, '');
  // Keyed by program names: `__proto__` or `constructor` must be plain keys (no prototype to reach).
  const values = Object.create(null) as Record<string, ShownValue>;
  for (const v of parsed.nextStep?.variables ?? []) values[v.name] = shown(v.value, v.type);
  return {
    nextLine: parsed.nextStep ? parsed.nextStep.next_line : null,
    values,
    answerer: { kind: provider.info.kind, name: provider.info.label, ...(note ? { note } : {}) },
    usage: { latencyMs, promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens },
    problems: parsed.problems,
    detail: { prompt: rendered, answers: parsed.answers },
  };
}

export async function judgeStep(
  engine: Answering,
  _trace: Trace,
  _step: number,
  prediction: StepPredictionResult,
  signal: AbortSignal,
  settings: Settings,
): Promise<StepJudgement> {
  const detail = prediction.detail;
  if (!detail) throw new EngineError('internal', 'This prediction has nothing to judge.');
  let verdicts: Verdict[];
  try {
    verdicts = await judgeAnswers(engine.judge(settings), detail.prompt, detail.answers, signal);
  } catch (e) {
    throw judgeFailure(e, signal);
  }
  const questions = detail.prompt.questions;
  const next = questions.find((q) => q.kind === 'next_line');
  const actualValues = Object.create(null) as Record<string, ShownValue>;
  for (const q of questions) {
    if (q.kind === 'state') actualValues[q.var] = 'nil' in q.truth ? shown('Nil', 'Nil') : shown(q.truth.repr, q.truth.type);
  }
  return {
    actualNextLine: next && next.kind === 'next_line' ? next.truth.line : -1,
    actualValues,
    questions: questions.map((q, i) => verdictOf(q, detail.answers[i], verdicts[i]!)),
  };
}

export async function verifyCall(engine: Answering, trace: Trace, access: ModelAccess, signal: AbortSignal): Promise<CallVerificationResult> {
  const s = access.settings;
  const rendered = callPrompt(trace, s, 'verify');
  const { provider, note } = engine.answerer(access);
  let answered;
  try {
    answered = await answerPrompt(provider, rendered, { signal });
  } catch (e) {
    throw fromModelError(e, s);
  }
  const { reply, latencyMs } = answered;
  const text = answered.samples[0]?.text ?? '';
  let reward;
  try {
    [reward] = await rewardResponses(engine.judge(s), rendered, [text], { alpha: s.alpha, gating: s.gating }, signal);
  } catch (e) {
    if (signal.aborted) throw new EngineError('cancelled', 'cancelled');
    throw new EngineError('internal', `The judge failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!reward) throw new EngineError('internal', 'The judge returned no reward.');
  const byId = new Map(rendered.questions.map((q) => [q.id, q] as const));
  const questions = reward.breakdown.flatMap((b) => {
    const q = byId.get(b.id);
    return q ? [verdictOf(q, b.answer, b.verdict)] : [];
  });
  const problems: string[] = [];
  if (reward.count_ok === false) problems.push(`Expected ${reward.questions ?? rendered.questions.length} answers, got ${reward.answers ?? 0}.`);
  if (reward.error) problems.push(reward.error);
  const sample: VerificationSample = {
    questions: rendered.questions,
    format: rendered.format,
    template: rendered.template,
    messages: asMessages(rendered.prompt),
    answerText: text,
    answerer: provider.info.label,
    reward,
  };
  return {
    template: rendered.template,
    questions,
    rewards: {
      rIO: reward.r_io ?? 0,
      rWhite: reward.r_white ?? 0,
      r: reward.reward,
      alpha: reward.alpha ?? s.alpha,
      gated: reward.gated !== null && reward.gated !== undefined,
    },
    answerer: { kind: provider.info.kind, name: provider.info.label, ...(note ? { note } : {}) },
    usage: { latencyMs, promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens },
    problems,
    sample,
  };
}
