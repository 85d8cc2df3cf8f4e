// Asking and judging: the next-step questions at one step of a run (the JSON
// next-step prompt) and the mixed prompt for a whole call (ExecVerify by
// default), answered by the model or the baseline and scored by the one judge.
import { performance } from 'node:perf_hooks';
import { JudgeProtocolError } from '../engine/judge/client';
import type { Reward, Verdict } from '../engine/judge/truth';
import { baselineQuestion, type BaselineQuestion, type Provider, type ProviderReply } from '../engine/model';
import { parseNextStep } from '../engine/model/answers';
import { asMessages } from '../engine/model/prompt';
import { BUILTIN_TEMPLATES, renderPrompts, type RenderedPrompt, type Template } from '../engine/model/templates';
import { generateQuestions, nextStepQuestions, referenceAnswer, seedFrom, toGroundTruth, type Question } from '../engine/questions';
import { decodeTrace, type DecodedTrace } from '../engine/trace/decode';
import type { Trace } from '../engine/trace/schema';
import { EngineError, type CallVerificationResult, type ModelAccess, type StepJudgement, type StepPredictionResult } from './engine';
import { fromModelError, type LiveEngine } from './live-engine';
import type { QuestionVerdict, Settings, ShownValue } from './protocol';

/** What a prediction keeps for its judging later: the questions and the answer per question. */
interface StepDetail {
  questions: Question[];
  answers: (string | null)[];
}

/** What a verification keeps for the sample store. */
export interface VerificationSample {
  questions: Question[];
  format: RenderedPrompt['format'];
  template: string;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  answerText: string;
  answerer: string;
  reward: Reward;
}

const decodedCache = new WeakMap<Trace, DecodedTrace>();
function decoded(trace: Trace): DecodedTrace {
  let d = decodedCache.get(trace);
  if (!d) {
    d = decodeTrace(trace);
    decodedCache.set(trace, d);
  }
  return d;
}

function template(name: string): Template {
  const t = BUILTIN_TEMPLATES.find((x) => x.name === name);
  if (!t) throw new EngineError('bad_params', `Unknown template “${name}”. Use one of: ${BUILTIN_TEMPLATES.map((x) => x.name).join(', ')} (execverify.template).`);
  return t;
}

function site(q: Question): Parameters<typeof baselineQuestion>[1] {
  if (q.kind === 'output' || q.kind === 'input') return { kind: q.kind };
  return { kind: q.kind, frame: q.frame, line: q.line, k: 'k' in q ? q.k : undefined, var: 'var' in q ? q.var : undefined };
}

function entryCall(trace: Trace): string | undefined {
  return trace.entry.kind === 'call' ? trace.entry.expr : undefined;
}

async function ask(provider: Provider, rendered: RenderedPrompt, baseline: BaselineQuestion[], signal: AbortSignal, settings: Settings): Promise<{ reply: ProviderReply; latencyMs: number }> {
  const start = performance.now();
  try {
    const reply = await provider.answer({ prompt: rendered.prompt, format: rendered.format, questions: baseline, templateVersion: rendered.template, signal });
    return { reply, latencyMs: performance.now() - start };
  } catch (e) {
    throw fromModelError(e, settings);
  }
}

function shown(repr: string, type: string): ShownValue {
  return { value: repr, type };
}

function truthText(q: Question): string {
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

function verdictOf(q: Question, answer: string | null | undefined, v: Verdict): QuestionVerdict {
  return {
    kind: q.kind,
    line: 'line' in q ? q.line : 0,
    label: label(q),
    ...('var' in q ? { var: q.var } : {}),
    predicted: answer === null || answer === undefined ? '(no answer)' : answer,
    actual: truthText(q),
    ok: v.correct,
  };
}

export async function predictStep(engine: LiveEngine, trace: Trace, step: number, access: ModelAccess, signal: AbortSignal): Promise<StepPredictionResult> {
  const d = decoded(trace);
  const at = d.steps[step];
  if (!at || at.event !== 'line') {
    throw new EngineError('bad_params', `Step ${step} is a “${at?.event ?? 'missing'}” event, not a line: step to a line of code, then predict.`);
  }
  const questions = nextStepQuestions(trace, step, {}, d);
  if (questions.length === 0) throw new EngineError('bad_params', `Nothing can be asked at step ${step}: the run ended (a limit?) before the next step was recorded.`);
  const t = template('next-step');
  const locals = Object.entries(d.locals(step))
    .map(([name, v]) => `${name} = ${v.repr.length > 200 ? `${v.repr.slice(0, 200)}…` : v.repr}`)
    .join(', ');
  const k = questions.find((q) => q.kind === 'next_line' || q.kind === 'state');
  const source = trace.files[at.file]?.source ?? '';
  const { prompts } = renderPrompts(t, questions, {
    code: source,
    call: entryCall(trace),
    stop: { line: at.line, lineText: (source.split('\n')[at.line - 1] ?? '').trim(), k: k && 'k' in k ? k.k : 1, locals: locals || '(none)' },
  });
  const rendered = prompts[0];
  if (!rendered) throw new EngineError('internal', 'The next-step template asked nothing.');
  const { provider, note } = engine.answerer(access);
  const baseline = rendered.questions.map((q) => baselineQuestion(d, site(q)));
  const { reply, latencyMs } = await ask(provider, rendered, baseline, signal, access.settings);
  const text = reply.samples[0]?.text ?? '';
  const parsed = parseNextStep(text);
  const problems: string[] = [];
  if (!parsed.ok) problems.push(`The answer is not the JSON asked for (${parsed.error}); every question counts as wrong.`);
  const answer = parsed.ok ? parsed.value : undefined;
  const answers = rendered.questions.map((q) => {
    if (!answer) return null;
    if (q.kind === 'next_line') return String(answer.next_line);
    if (q.kind !== 'state') return null;
    const v = answer.variables.find((x) => x.name === q.var);
    if (!v) {
      problems.push(`No answer for ${q.var}.`);
      return null;
    }
    return v.value === 'Nil' ? 'Nil' : `${v.value}; ${v.type}`;
  });
  // Keyed by program names: `__proto__` or `constructor` must be plain keys (no prototype to reach).
  const values = Object.create(null) as Record<string, ShownValue>;
  for (const v of answer?.variables ?? []) values[v.name] = shown(v.value, v.type);
  const detail: StepDetail = { questions: rendered.questions, answers };
  return {
    nextLine: answer ? answer.next_line : null,
    values,
    answerer: { kind: provider.info.kind, name: provider.info.label, ...(note ? { note } : {}) },
    usage: { latencyMs, promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens },
    problems,
    detail,
  };
}

export async function judgeStep(engine: LiveEngine, _trace: Trace, _step: number, prediction: StepPredictionResult, signal: AbortSignal, settings: Settings): Promise<StepJudgement> {
  const detail = prediction.detail as StepDetail | undefined;
  if (!detail) throw new EngineError('internal', 'This prediction has nothing to judge.');
  let verdicts: Verdict[];
  try {
    verdicts = await engine
      .judge(settings)
      .judgeBatch(detail.questions.map((q, i) => ({ kind: q.kind, answer: detail.answers[i], truth: q.truth })), { next_line_match: 'number' }, signal);
  } catch (e) {
    if (signal.aborted) throw new EngineError('cancelled', 'cancelled');
    throw new EngineError('internal', e instanceof JudgeProtocolError ? e.message : `The judge failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  const next = detail.questions.find((q) => q.kind === 'next_line');
  const actualValues = Object.create(null) as Record<string, ShownValue>;
  for (const q of detail.questions) {
    if (q.kind === 'state') actualValues[q.var] = 'nil' in q.truth ? shown('Nil', 'Nil') : shown(q.truth.repr, q.truth.type);
  }
  return {
    actualNextLine: next && next.kind === 'next_line' ? next.truth.line : -1,
    actualValues,
    questions: detail.questions.map((q, i) => verdictOf(q, detail.answers[i], verdicts[i]!)),
  };
}

export async function verifyCall(engine: LiveEngine, trace: Trace, access: ModelAccess, signal: AbortSignal): Promise<CallVerificationResult> {
  const s = access.settings;
  const call = entryCall(trace);
  if (!call) throw new EngineError('bad_params', 'Verify whole call needs a call entry such as f([1, 2]); this run is a script.');
  const t = template(s.template);
  const questions = generateQuestions(trace, { seed: seedFrom(call), textMatchedNextLine: t.format === 'execverify' });
  const source = trace.files[0]?.source ?? '';
  const { prompts } = renderPrompts(t, questions, { code: source, call });
  if (prompts.length !== 1) {
    throw new EngineError(
      'bad_params',
      prompts.length === 0
        ? `Template “${t.name}” asks nothing about this run (no questions of its kinds). Try the execverify template.`
        : `Template “${t.name}” asks one question per prompt; Verify whole call needs a mixed template such as execverify (execverify.template).`,
    );
  }
  const rendered = prompts[0]!;
  const d = decoded(trace);
  const { provider, note } = engine.answerer(access);
  const { reply, latencyMs } = await ask(provider, rendered, rendered.questions.map((q) => baselineQuestion(d, site(q))), signal, s);
  const text = reply.samples[0]?.text ?? '';
  const truth = toGroundTruth(rendered.questions, rendered.format, { reward: { alpha: s.alpha, gating: s.gating } });
  let reward: Reward;
  try {
    reward = await engine.judge(s).reward(truth, text, { reward: { alpha: s.alpha, gating: s.gating } }, signal);
  } catch (e) {
    if (signal.aborted) throw new EngineError('cancelled', 'cancelled');
    throw new EngineError('internal', `The judge failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  const byId = new Map(rendered.questions.map((q) => [q.id, q] as const));
  const verdicts = reward.breakdown.flatMap((b) => {
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
    questions: verdicts,
    rewards: { rIO: reward.r_io ?? 0, rWhite: reward.r_white ?? 0, r: reward.reward, alpha: reward.alpha ?? s.alpha, gated: reward.gated !== null && reward.gated !== undefined },
    answerer: { kind: provider.info.kind, name: provider.info.label, ...(note ? { note } : {}) },
    usage: { latencyMs, promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens },
    problems,
    sample,
  };
}

/** Questions, prompt and reference for a run saved without a verification (no model answers). */
export function unansweredSample(trace: Trace, templateName: string): Omit<VerificationSample, 'answerText' | 'answerer' | 'reward'> & { reference: string } {
  const call = entryCall(trace);
  if (!call) throw new EngineError('bad_params', 'Only call entries (such as f([1, 2])) can become samples; this run is a script.');
  const t = template(templateName);
  const questions = generateQuestions(trace, { seed: seedFrom(call), textMatchedNextLine: t.format === 'execverify' });
  const { prompts } = renderPrompts(t, questions, { code: trace.files[0]?.source ?? '', call });
  const rendered = prompts[0];
  if (!rendered || prompts.length !== 1) throw new EngineError('bad_params', `Template “${t.name}” cannot make one prompt for this run; use the execverify template.`);
  return { questions: rendered.questions, format: rendered.format, template: rendered.template, messages: asMessages(rendered.prompt), reference: referenceAnswer(rendered.questions, rendered.format) };
}
