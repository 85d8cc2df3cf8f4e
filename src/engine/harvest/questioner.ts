// The question and model stages of harvesting, on the engine's one road
// (engine/ask): the questions and prompt a template makes of a sample's trace,
// ground truth as the judge reads it, and — when a provider is configured —
// k answers scored by the Python judge's reward.
import type { ModelAnswer } from '../dataset/record';
import { askPrepared, prepareAsk, type PreparedAsk } from '../ask';
import { JudgeClient, type WorkerRequester } from '../judge/client';
import { groundTruthString } from '../judge/schema';
import type { Provider } from '../model';
import { asMessages } from '../model/prompt';
import { BUILTIN_TEMPLATES, type Template } from '../model/templates';
import type { Trace } from '../trace/schema';
import type { AnswerScorer, Questioner } from './pipeline';

/** Templates a harvest can use: one prompt per sample (perPrompt "all"). */
export function harvestTemplate(name: string, templates: readonly Template[] = BUILTIN_TEMPLATES): Template | string {
  const t = templates.find((x) => x.name === name);
  if (!t)
    return `unknown template '${name}' (one of ${templates
      .filter((x) => x.perPrompt === 'all')
      .map((x) => x.name)
      .join(', ')})`;
  if (t.perPrompt !== 'all') return `template '${name}' asks one question per prompt; harvesting needs one prompt per sample (e.g. execverify)`;
  return t;
}

export interface HarvestAsking {
  /** Questions → prompt + ground truth + reference answer, with the template. */
  questioner: Questioner;
  /** k answers from the provider (a model or the baseline), each scored by the judge's reward op; none without a provider. */
  scorer: AnswerScorer | undefined;
}

/**
 * The questioner and the scorer of one harvest: the scorer answers exactly the
 * prompt the questioner made for the same trace (its stop sequences included).
 */
export function harvestAsking(template: Template, answering?: { provider: Provider; workers: WorkerRequester; k: number }): HarvestAsking {
  // The trace is traced from the sample's code and entry, so the engine's seed is the sample's.
  const asked = new WeakMap<Trace, PreparedAsk>();
  const prepare = (trace: Trace): PreparedAsk => {
    let p = asked.get(trace);
    if (!p) {
      p = prepareAsk(trace, template, { kind: 'call' });
      asked.set(trace, p);
    }
    return p;
  };
  const questioner: Questioner = (trace) => {
    const prepared = prepare(trace);
    if (prepared.questions.length === 0) return { skip: 'no_questions' };
    const rendered = prepared.prompts[0];
    if (!rendered || rendered.questions.length === 0) return { skip: 'no_questions_for_template' };
    return {
      questions: rendered.questions,
      prompt: asMessages(rendered.prompt),
      groundTruth: groundTruthString(rendered.groundTruth),
      reference: rendered.reference,
      format: rendered.format,
      template: rendered.template,
    };
  };
  if (!answering) return { questioner, scorer: undefined };
  const { provider, workers, k } = answering;
  const judge = new JudgeClient(workers);
  const scorer: AnswerScorer = {
    label: provider.info.label,
    k,
    async score(_asked, trace, signal): Promise<ModelAnswer[]> {
      const [outcome] = (await askPrepared(prepare(trace), { provider, judge, samples: k, signal })).prompts;
      if (!outcome) return [];
      if (!outcome.ok) throw outcome.error;
      return outcome.samples.map((s) => {
        const r = s.reward!;
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
  return { questioner, scorer };
}
