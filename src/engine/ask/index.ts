// The middle of the road, once: questions → prompt → provider → parsed answers
// → judge → verdicts and rewards. The editor server, `execverify ask`,
// harvesting and the benchmarks call this module (whole or stage by stage);
// none of them writes its own copy. See docs/questions-and-judging.md#asking.
import type { JudgeClient } from '../judge/client';
import type { Reward, RewardOptions, Verdict } from '../judge/schema';
import type { Provider } from '../model/provider';
import type { Template } from '../model/templates';
import type { Trace } from '../trace/schema';
import { answerPrompt, type AnsweredPrompt, type AnsweredSample } from './answer';
import { judgeAnswers, rewardResponses, verdictsOf } from './judge';
import { AskError, prepareAsk, type AskPrompt, type AskTarget, type PreparedAsk } from './prepare';

export { answerPrompt, parseReply, requestFor, type AnswerablePrompt, type AnsweredPrompt, type AnsweredSample, type ParsedReply } from './answer';
export { judgeAnswers, rewardResponses, verdictsOf } from './judge';
export { AskError, decoded, prepareAsk, questionOptions, questionSeed, type AskErrorCode, type AskPrompt, type AskTarget, type PreparedAsk } from './prepare';

export interface JudgedSample extends AnsweredSample {
  /** One verdict per question of the prompt, in prompt order. */
  verdicts: Verdict[];
  /** Whole-call asks: the reward of this response (R, R_IO, R_white, breakdown). */
  reward?: Reward;
}

/** What became of one prompt: answered and judged, or the provider failed (the other prompts still count). */
export type PromptOutcome =
  { prompt: AskPrompt; ok: true; answered: AnsweredPrompt; samples: JudgedSample[] } | { prompt: AskPrompt; ok: false; error: unknown };

export interface AskOptions {
  provider: Provider;
  judge: JudgeClient;
  /** k samples per prompt (pass@k); default the provider's. */
  samples?: number;
  /** α and gating of R = 2·((1−α)·R_IO + α·R_white); the judge's defaults when absent. */
  reward?: RewardOptions;
  signal?: AbortSignal;
}

export interface AskResult {
  prepared: PreparedAsk;
  prompts: PromptOutcome[];
}

/**
 * Ask the prepared prompts (all at once; the client's concurrency limit
 * applies) and judge every sample: whole-call prompts by the reward op, the
 * next step by a verdict per parsed answer.
 */
export async function askPrepared(prepared: PreparedAsk, options: AskOptions): Promise<AskResult> {
  const { provider, judge, signal } = options;
  // Its truth has not run yet: engine/live answers it now and judges it at the session's next stop.
  if (prepared.target.kind === 'live') throw new AskError('nothing_to_ask', 'A live stop is judged when its session stops again (engine/live).');
  const replies = await Promise.allSettled(prepared.prompts.map((p) => answerPrompt(provider, p, { samples: options.samples, signal })));
  const prompts: PromptOutcome[] = [];
  for (const [i, prompt] of prepared.prompts.entries()) {
    const settled = replies[i]!;
    if (settled.status === 'rejected') {
      prompts.push({ prompt, ok: false, error: settled.reason });
      continue;
    }
    const answered = settled.value;
    let samples: JudgedSample[];
    if (prepared.target.kind === 'step') {
      samples = [];
      for (const s of answered.samples) samples.push({ ...s, verdicts: await judgeAnswers(judge, prompt, s.parsed.answers, signal) });
    } else {
      const rewards = await rewardResponses(
        judge,
        prompt,
        answered.samples.map((s) => s.text),
        options.reward,
        signal,
      );
      samples = answered.samples.map((s, j) => ({ ...s, reward: rewards[j]!, verdicts: verdictsOf(prompt, rewards[j]!) }));
    }
    prompts.push({ prompt, ok: true, answered, samples });
  }
  return { prepared, prompts };
}

/** The whole road for one trace: prepare the questions for `target` with `template`, ask, judge. */
export async function ask(trace: Trace, target: AskTarget, template: Template, options: AskOptions & { seed?: number }): Promise<AskResult> {
  return askPrepared(prepareAsk(trace, template, target, { seed: options.seed, reward: options.reward }), options);
}
