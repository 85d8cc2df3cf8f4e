// The TypeScript side of the Python judge: typed calls to the worker ops
// (judge, judge_batch, eval_expr, reward, reward_batch, cruxeval_score), every
// response validated. The judging itself happens only in Python, so the
// editor, the CLI and the trainers never disagree.
import { z } from 'zod';
import type { QuestionKind } from '../questions/schema';
import { RewardSchema, VerdictSchema, type GroundTruth, type JudgeOptions, type Reward, type RewardOptions, type Verdict } from './schema';

/** What the judge needs from a worker pool (worker/pool.ts WorkerPool, and so TracerPool, satisfies it). */
export interface WorkerRequester {
  request(op: string, params?: Record<string, unknown>, signal?: AbortSignal, timeoutMs?: number): Promise<unknown>;
}

export interface JudgeItem {
  kind: QuestionKind;
  answer: string | null | undefined;
  truth: unknown;
  options?: JudgeOptions;
}

/** One answer for the sandbox (op eval_expr). */
export type ExprItem =
  | { mode: 'typed'; answer: string; value: { repr: string; type: string; literal: boolean }; code?: string; tol?: number; timeout_s?: number }
  | { mode: 'official'; answer: string; expected: string; code: string; timeout_s?: number };

/** One CRUXEval sample with its generations (the official generations.json row). */
export interface CruxevalSample {
  code: string;
  input: string;
  output: string;
  generations: string[];
}

/** The judge's answer did not have the promised shape (a version mismatch, never a user error). */
/** One REval answer to score: the task, the model's raw text, and the truth reval-truth.ts built for it. */
export interface RevalItem {
  task: 'coverage' | 'state' | 'path' | 'output';
  answer: string;
  truth: Record<string, unknown>;
}

export class JudgeProtocolError extends Error {
  constructor(op: string, detail: string) {
    super(`judge op '${op}' returned an unexpected result (${detail}): make sure python-tracer matches the extension version`);
    this.name = 'JudgeProtocolError';
  }
}

function check<S extends z.ZodTypeAny>(op: string, schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new JudgeProtocolError(op, issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid');
  }
  return parsed.data;
}

/** Generous: a batch of sandboxed answers may take several seconds each. */
const timeoutFor = (n: number, perItemS = 3) => 30_000 + n * (perItemS + 1) * 1000;

export class JudgeClient {
  constructor(private readonly workers: WorkerRequester) {}

  async judge(item: JudgeItem, signal?: AbortSignal): Promise<Verdict> {
    const raw = await this.workers.request('judge', { ...item }, signal, timeoutFor(1));
    return check('judge', VerdictSchema, raw);
  }

  /** Sandboxed answers of the batch share one child process in the worker. */
  async judgeBatch(items: JudgeItem[], options?: JudgeOptions, signal?: AbortSignal): Promise<Verdict[]> {
    const raw = await this.workers.request('judge_batch', { items, options }, signal, timeoutFor(items.length));
    const out = check('judge_batch', z.object({ verdicts: z.array(VerdictSchema) }), raw).verdicts;
    if (out.length !== items.length) throw new JudgeProtocolError('judge_batch', 'verdict count differs');
    return out;
  }

  /**
   * Raw sandboxed evaluation: `typed` compares the answer's value with a
   * recorded Value; `official` runs `{code}\nassert {expected} == {answer}`.
   */
  async evalExpr(items: ExprItem[], timeoutS?: number, signal?: AbortSignal): Promise<Verdict[]> {
    const params: Record<string, unknown> = { items };
    if (timeoutS !== undefined) params.timeout_s = timeoutS;
    const raw = await this.workers.request('eval_expr', params, signal, timeoutFor(items.length, timeoutS));
    const out = check('eval_expr', z.object({ results: z.array(VerdictSchema) }), raw).results;
    if (out.length !== items.length) throw new JudgeProtocolError('eval_expr', 'result count differs');
    return out;
  }

  async reward(
    groundTruth: GroundTruth | string,
    response: string,
    options?: { judge?: JudgeOptions; reward?: RewardOptions },
    signal?: AbortSignal,
  ): Promise<Reward> {
    const raw = await this.workers.request('reward', { ground_truth: groundTruth, response, options }, signal, timeoutFor(2));
    return check('reward', RewardSchema, raw);
  }

  async rewardBatch(
    items: { groundTruth: GroundTruth | string; response: string }[],
    options?: { judge?: JudgeOptions; reward?: RewardOptions },
    signal?: AbortSignal,
  ): Promise<Reward[]> {
    const raw = await this.workers.request(
      'reward_batch',
      { items: items.map((i) => ({ ground_truth: i.groundTruth, response: i.response })), options },
      signal,
      timeoutFor(items.length * 2),
    );
    return check('reward_batch', z.object({ scores: z.array(RewardSchema) }), raw).scores;
  }

  /** Official CRUXEval scoring of each sample's generations (one verdict per generation). */
  async cruxevalScore(samples: CruxevalSample[], mode: 'input' | 'output', options: { timeoutS?: number } = {}, signal?: AbortSignal): Promise<Verdict[][]> {
    const n = samples.reduce((s, x) => s + x.generations.length, 0);
    const params: Record<string, unknown> = { samples, mode };
    if (options.timeoutS !== undefined) params.timeout_s = options.timeoutS;
    const raw = await this.workers.request('cruxeval_score', params, signal, timeoutFor(n, options.timeoutS));
    return check('cruxeval_score', z.object({ results: z.array(z.array(VerdictSchema)) }), raw).results;
  }

  /** REval's rules (mode reval) or ours (strict) for each {task, answer, truth} (python-tracer/execverify/reval.py). */
  async revalScore(
    items: RevalItem[],
    options: { mode?: 'reval' | 'strict'; cot?: boolean; timeoutS?: number } = {},
    signal?: AbortSignal,
  ): Promise<Verdict[]> {
    const params: Record<string, unknown> = { items, mode: options.mode ?? 'reval', cot: options.cot ?? false };
    if (options.timeoutS !== undefined) params.timeout_s = options.timeoutS;
    const raw = await this.workers.request('reval_score', params, signal, timeoutFor(items.length, options.timeoutS));
    const out = check('reval_score', z.object({ verdicts: z.array(VerdictSchema) }), raw).verdicts;
    if (out.length !== items.length) throw new JudgeProtocolError('reval_score', 'verdict count differs');
    return out;
  }
}

/** Unbiased pass@k (Codex / CRUXEval): 1 − C(n−c, k) / C(n, k); 0 when k > n. */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) return 0;
  if (n - c < k) return 1;
  let prod = 1;
  for (let i = n - c + 1; i <= n; i++) prod *= 1 - k / i;
  return 1 - prod;
}
