// Parsed answers → verdicts, responses → rewards: both through the one Python
// judge (engine/judge/client), never decided here.
import type { JudgeClient } from '../judge/client';
import type { Reward, RewardOptions, Verdict } from '../judge/schema';
import type { AskPrompt } from './prepare';

/** A verdict per question for answers already parsed (the next-step road: one answer per question). */
export async function judgeAnswers(judge: JudgeClient, prompt: AskPrompt, answers: readonly (string | null)[], signal?: AbortSignal): Promise<Verdict[]> {
  return judge.judgeBatch(
    prompt.questions.map((q, i) => ({ kind: q.kind, answer: answers[i], truth: q.truth })),
    // Next-line answers are line numbers in the JSON format, source text in the line formats.
    prompt.format === 'next_step_json' ? { next_line_match: 'number' } : undefined,
    signal,
  );
}

/** R, R_IO, R_white and the per-question breakdown for each response text (the judge parses it by its format). */
export async function rewardResponses(
  judge: JudgeClient,
  prompt: AskPrompt,
  texts: readonly string[],
  reward?: RewardOptions,
  signal?: AbortSignal,
): Promise<Reward[]> {
  if (texts.length === 0) return [];
  return judge.rewardBatch(
    texts.map((response) => ({ groundTruth: prompt.groundTruth, response })),
    reward ? { reward } : undefined,
    signal,
  );
}

/** The breakdown's verdicts in prompt order (a question the breakdown leaves out is wrong, reason "missing"). */
export function verdictsOf(prompt: AskPrompt, reward: Reward): Verdict[] {
  const byId = new Map(reward.breakdown.map((b) => [b.id, b.verdict] as const));
  return prompt.questions.map((q) => byId.get(q.id) ?? { correct: false, reason: 'missing' });
}
