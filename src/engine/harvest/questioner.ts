// The question and model stages of harvesting, built from the shared engine:
// questions from the trace (engine/questions), the prompt from a template
// (engine/model/templates), ground truth as the judge reads it, and — when a
// provider is configured — k answers scored by the Python judge's reward.
import type { ModelAnswer } from '../dataset/record';
import { JudgeClient, type WorkerRequester } from '../judge/client';
import { groundTruthString } from '../judge/truth';
import { asMessages, chatPrompt } from '../model/prompt';
import { baselineQuestion, type Provider } from '../model';
import { BUILTIN_TEMPLATES, renderPrompts, type Template } from '../model/templates';
import { generateQuestions, referenceAnswer, seedFrom, toGroundTruth, type Question, type QuestionOptions } from '../questions';
import { decodeTrace } from '../trace/decode';
import type { Trace } from '../trace/schema';
import type { AnswerScorer, Questioner, SampleQuestions } from './pipeline';

/** Templates a harvest can use: one prompt per sample (perPrompt "all"). */
export function harvestTemplate(name: string, templates: readonly Template[] = BUILTIN_TEMPLATES): Template | string {
  const t = templates.find((x) => x.name === name);
  if (!t) return `unknown template '${name}' (one of ${templates.filter((x) => x.perPrompt === 'all').map((x) => x.name).join(', ')})`;
  if (t.perPrompt !== 'all') return `template '${name}' asks one question per prompt; harvesting needs one prompt per sample (e.g. execverify)`;
  return t;
}

/** Questions → prompt + ground truth + reference answer, with the given template. */
export function templateQuestioner(template: Template, options: QuestionOptions = {}): Questioner {
  return (trace, sample) => {
    const questions = generateQuestions(trace, { seed: seedFrom(`${sample.code}\u0000${sample.entry}`), ...options });
    if (questions.length === 0) return { skip: 'no_questions' };
    const { prompts } = renderPrompts(template, questions, { code: sample.code, call: sample.entry });
    const rendered = prompts[0];
    if (!rendered || rendered.questions.length === 0) return { skip: 'no_questions_for_template' };
    const asked = rendered.questions;
    return {
      questions: asked,
      prompt: asMessages(rendered.prompt),
      groundTruth: groundTruthString(toGroundTruth(asked, rendered.format)),
      reference: referenceAnswer(asked, rendered.format),
      format: rendered.format,
      template: rendered.template,
    };
  };
}

/** k answers from a provider (a model or the baseline), each scored by the judge's reward op. */
export function providerScorer(provider: Provider, workers: WorkerRequester, k: number): AnswerScorer {
  const judge = new JudgeClient(workers);
  return {
    label: provider.info.label,
    k,
    async score(asked: SampleQuestions, trace: Trace, signal?: AbortSignal): Promise<ModelAnswer[]> {
      const decoded = decodeTrace(trace);
      const questions = asked.questions as Question[];
      const reply = await provider.answer({
        prompt: chatPrompt(asked.prompt),
        format: (asked.format ?? 'execverify') as Parameters<Provider['answer']>[0]['format'],
        questions: questions.map((q) =>
          baselineQuestion(decoded, {
            kind: q.kind,
            frame: 'frame' in q ? q.frame : undefined,
            line: 'line' in q ? q.line : undefined,
            k: 'k' in q ? q.k : undefined,
            var: 'var' in q ? q.var : undefined,
          }),
        ),
        samples: k,
        templateVersion: asked.template,
        signal,
      });
      const rewards = await judge.rewardBatch(
        reply.samples.map((s) => ({ groundTruth: asked.groundTruth, response: s.text })),
        undefined,
        signal,
      );
      return reply.samples.map((s, i) => {
        const r = rewards[i]!;
        return {
          model: provider.info.label,
          text: s.text,
          reward: r.reward,
          rIo: r.r_io ?? null,
          rWhite: r.r_white ?? null,
          breakdown: (r.breakdown ?? []) as unknown[],
        };
      });
    },
  };
}
