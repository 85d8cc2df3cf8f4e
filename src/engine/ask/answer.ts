// Prompt → provider → parsed answers: one request per prompt (the template's
// stop sequences and structured-output flag always go with it), and every
// reply read by the one answer parser of its format.
import { performance } from 'node:perf_hooks';
import { nextStepAnswers, parseAnswers, parseNextStep, type NextStepAnswer } from '../model/answers';
import type { AnswerRequest, Provider, ProviderReply } from '../model/provider';
import type { AskPrompt } from './prepare';

/** One response, read: the answer to each question in prompt order (null: none). */
export interface ParsedReply {
  answers: (string | null)[];
  /** The next-step JSON, when the format is next_step_json and the reply holds it. */
  nextStep?: NextStepAnswer;
  /** What the user should know about the reply (not the JSON asked for, a variable left out). */
  problems: string[];
}

export interface AnsweredSample {
  text: string;
  finishReason: string | null;
  parsed: ParsedReply;
}

/**
 * What answering reads of a prompt: an ask prompt, or a prompt a benchmark
 * renders in its own published format (REval, src/engine/eval) that is
 * scored from the raw text by that benchmark's rules.
 */
export type AnswerablePrompt = Pick<AskPrompt, 'prompt' | 'format' | 'questions' | 'baseline' | 'template' | 'stop' | 'structured'>;

export interface AnsweredPrompt<P extends AnswerablePrompt = AskPrompt> {
  prompt: P;
  reply: ProviderReply;
  latencyMs: number;
  samples: AnsweredSample[];
}

/** The provider request for a prompt: k samples, the stop sequences, the template version for the cache key. */
export function requestFor(prompt: AnswerablePrompt, options: { samples?: number; signal?: AbortSignal } = {}): AnswerRequest {
  return {
    prompt: prompt.prompt,
    format: prompt.format,
    questions: prompt.baseline,
    templateVersion: prompt.template,
    ...(prompt.stop ? { stop: prompt.stop } : {}),
    structured: prompt.structured,
    ...(options.samples !== undefined ? { samples: options.samples } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

/**
 * A response's answers, per question. The line formats go through
 * parseAnswers (the Python judge reads them by the same rules; the shared
 * vectors keep the two equal); the next-step JSON through parseNextStep and
 * nextStepAnswers, state_any included.
 */
export function parseReply(prompt: Pick<AskPrompt, 'format' | 'questions'>, text: string): ParsedReply {
  const problems: string[] = [];
  if (prompt.format !== 'next_step_json') {
    const lines = parseAnswers(prompt.format, text);
    return { answers: prompt.questions.map((_q, i) => lines[i] ?? null), problems };
  }
  const parsed = parseNextStep(text);
  if (!parsed.ok) {
    problems.push(`The answer is not the JSON asked for (${parsed.error}); every question counts as wrong.`);
    return { answers: prompt.questions.map(() => null), problems };
  }
  const answers = nextStepAnswers(parsed.value, prompt.questions);
  prompt.questions.forEach((q, i) => {
    if ((q.kind === 'state' || q.kind === 'state_any') && answers[i] === null) problems.push(`No answer for ${q.var}.`);
  });
  return { answers, nextStep: parsed.value, problems };
}

/** Ask the provider one prompt (k samples) and parse every sample. Provider errors (ModelError) are thrown as they are. */
export async function answerPrompt<P extends AnswerablePrompt = AskPrompt>(
  provider: Provider,
  prompt: P,
  options: { samples?: number; signal?: AbortSignal; now?: () => number } = {},
): Promise<AnsweredPrompt<P>> {
  const now = options.now ?? (() => performance.now());
  const start = now();
  const reply = await provider.answer(requestFor(prompt, options));
  const latencyMs = now() - start;
  return {
    prompt,
    reply,
    latencyMs,
    samples: reply.samples.map((s) => ({ text: s.text, finishReason: s.finishReason, parsed: parseReply(prompt, s.text) })),
  };
}
