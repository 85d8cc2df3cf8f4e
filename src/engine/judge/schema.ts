// The ground truth that travels with a question set — in datasets (verl's
// reward_model.ground_truth, TRL / OpenRLHF columns) as a JSON string — and the
// verdicts and rewards the Python judge returns for it. One schema per concept;
// python-tracer/execverify/reward.py reads exactly this format.
import { z } from 'zod';
import { ValueSchema } from '../trace/schema';
import { AnswerFormatSchema } from '../model/answers';

export const TRUTH_SCHEMA_VERSION = 'execverify.truth/1';

/** Judge knobs (SEMANTICS §4); every field has the documented default in Python. */
export const JudgeOptionsSchema = z.object({
  /** Absolute float tolerance (default 1e-6). */
  float_tol: z.number().nonnegative().optional(),
  /** Output/input answers must be literals; expressions are not evaluated (default false). */
  strict_literals: z.boolean().optional(),
  /** A state answer must name the type (default true). */
  require_type: z.boolean().optional(),
  /** `hello; str` is the string 'hello' (default true). */
  unquoted_strings: z.boolean().optional(),
  /** auto: integers are line numbers, other text is source text (default auto). */
  next_line_match: z.enum(['auto', 'number', 'text']).optional(),
  /** Wall-clock limit of one sandboxed answer in seconds (default 3, as CRUXEval). */
  timeout_s: z.number().positive().optional(),
});
export type JudgeOptions = z.infer<typeof JudgeOptionsSchema>;

export const RewardOptionsSchema = z.object({
  /** Weight of the white-box part: R = 2·((1−α)·R_IO + α·R_white). Default 0.5. */
  alpha: z.number().min(0).max(1).optional(),
  /** ExecVerify gating: R_IO = 0 → R = 0; wrong answer count → R_white = 0. Default true. */
  gating: z.boolean().optional(),
});
export type RewardOptions = z.infer<typeof RewardOptionsSchema>;

const NilSchema = z.object({ nil: z.literal(true) });

/** Ground truth of each question kind, as the judge reads it. */
export const TruthByKind = {
  /** The value of v after the k-th run of L, or Nil when L never ran that often. */
  state: z.union([NilSchema, ValueSchema]),
  /** REval: the values of v after every run of L (empty: never ran → Nil). */
  state_any: z.object({ values: z.array(ValueSchema) }),
  /** Line after the k-th run of L in the same frame, -1 at the end; `lines` maps text answers to lines. */
  next_line: z.object({
    line: z.number().int(),
    text: z.string(),
    lines: z.record(z.string()).optional(),
  }),
  coverage: z.object({ covered: z.boolean() }),
  /** The entry call's return value; or the official CRUXEval rule (scorer: cruxeval). */
  output: z.union([
    z.object({ value: ValueSchema }),
    z.object({ scorer: z.literal('cruxeval'), code: z.string(), input: z.string(), expected: z.string() }),
    /** What a script prints (`expected`), compared under the stdout whitespace rule (judge.normalize_stdout; docs/self-simulation.md). */
    z.object({ scorer: z.literal('stdout'), expected: z.string() }),
  ]),
  /** Any call of `fn` that returns `output` (executed with `code`); or the official CRUXEval rule. */
  input: z.union([
    z.object({ code: z.string(), fn: z.string(), output: ValueSchema }),
    z.object({ scorer: z.literal('cruxeval'), code: z.string(), input: z.string(), expected: z.string() }),
  ]),
} as const;

export const TruthQuestionSchema = z.discriminatedUnion('kind', [
  z.object({ id: z.string(), kind: z.literal('state'), var: z.string().optional(), truth: TruthByKind.state }),
  z.object({ id: z.string(), kind: z.literal('state_any'), var: z.string().optional(), truth: TruthByKind.state_any }),
  z.object({ id: z.string(), kind: z.literal('next_line'), truth: TruthByKind.next_line }),
  z.object({ id: z.string(), kind: z.literal('coverage'), truth: TruthByKind.coverage }),
  z.object({ id: z.string(), kind: z.literal('output'), truth: TruthByKind.output }),
  z.object({ id: z.string(), kind: z.literal('input'), truth: TruthByKind.input }),
]);
export type TruthQuestion = z.infer<typeof TruthQuestionSchema>;

/**
 * `execverify.truth/1`: questions in prompt order (the answer to question i is
 * the i-th answer the format's parser finds), the answer format, and optional
 * judge / reward settings that travel with the record.
 */
export const GroundTruthSchema = z.object({
  schema: z.literal(TRUTH_SCHEMA_VERSION),
  format: AnswerFormatSchema,
  questions: z.array(TruthQuestionSchema).min(1),
  judge: JudgeOptionsSchema.optional(),
  reward: RewardOptionsSchema.optional(),
});
export type GroundTruth = z.infer<typeof GroundTruthSchema>;

/** The string stored in datasets (verl `reward_model.ground_truth`, TRL / OpenRLHF columns). */
export function groundTruthString(truth: GroundTruth): string {
  return JSON.stringify(GroundTruthSchema.parse(truth));
}

/** One judged answer. `reason` says why (equal, type_differs, time_limit, sandbox_refused, …). */
export const VerdictSchema = z
  .object({
    correct: z.boolean(),
    reason: z.string(),
    value_ok: z.boolean().nullable().optional(),
    type_ok: z.boolean().nullable().optional(),
    line: z.number().int().optional(),
    lines: z.array(z.number().int()).optional(),
    evaluated: z.boolean().optional(),
    message: z.string().optional(),
  })
  .passthrough();
export type Verdict = z.infer<typeof VerdictSchema>;

/** A reward with its explanation: one breakdown entry per question. */
export const RewardSchema = z
  .object({
    reward: z.number(),
    r_io: z.number().nullable(),
    r_white: z.number().nullable(),
    gated: z.enum(['io_wrong', 'answer_count']).nullable().optional(),
    count_ok: z.boolean().optional(),
    answers: z.number().int().optional(),
    questions: z.number().int().optional(),
    alpha: z.number().optional(),
    gating: z.boolean().optional(),
    error: z.string().optional(),
    breakdown: z.array(z.object({ id: z.string(), kind: z.string(), answer: z.string().nullable(), verdict: VerdictSchema })),
  })
  .passthrough();
export type Reward = z.infer<typeof RewardSchema>;
