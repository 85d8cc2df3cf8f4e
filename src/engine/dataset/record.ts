// The canonical dataset record (SEMANTICS §6): one verified sample, content-addressed.
// Every exporter reads this and nothing else; the store validates it on the way in and out.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { IsolationSchema } from '../trace/schema';

export const SAMPLE_SCHEMA_VERSION = 'execverify.sample/1';

export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const ProvenanceSchema = z.object({
  /** Project name (its directory name, or the configured one). */
  project: z.string(),
  /** Remote URL of the git repository; null outside git or without a remote (never a local path). */
  repository: z.string().nullable(),
  commit: z.string().nullable(),
  /** Path of the module, relative to the project root, with forward slashes. */
  file: z.string(),
  function: z.string(),
  /** First line of the function in that file. */
  line: z.number().int().nullable(),
  /** SPDX-ish name of the license found in the project (LICENSE file, pyproject), or null. */
  license: z.string().nullable(),
  /** The test whose run produced the call. */
  test: z.string().nullable(),
  /** Third-party packages the sample imports (`harvest --allow-import`) → their version, or null when unknown. */
  imports: z.record(z.string().nullable()).optional(),
  /** Where the ground truth comes from: absent, a whole recorded trace; "live-transition", one observed transition of a live debug session (docs/live-debugging.md). */
  truth: z.literal('live-transition').optional(),
  /** How a synthesized or mutated sample was made (docs/synthesis.md); absent for harvested and editor samples. */
  synthesis: z
    .object({
      source: z.enum(['synthesized', 'mutated']),
      /** Curriculum level of the constraints; null for a mutated harvested sample. */
      level: z.number().int().positive().nullable(),
      seed: z.number().int().nonnegative(),
      /** The spec's id (`s<seed>-<index>`, the Batch custom_id), or the mutated sample's id. */
      spec: z.string(),
      constraintsVersion: z.string().nullable(),
      /** The constraint combination the program was asked to satisfy. */
      constraints: z.record(z.unknown()).nullable(),
      /** A mutated sample: the call whose arguments were mutated. */
      from: z.string().optional(),
      /** 2: a call the model wrote when asked for more inputs of a kept program (absent: one of its example calls). */
      round: z.literal(2).optional(),
    })
    .optional(),
});
export type Provenance = z.infer<typeof ProvenanceSchema>;

export const DifficultySchema = z.object({
  /** Structural score in [0, 1]: higher is harder; see docs/harvest.md for the formula. */
  score: z.number().min(0).max(1),
  steps: z.number().int().nonnegative(),
  branches: z.number().int().nonnegative(),
  loopIterations: z.number().int().nonnegative(),
  nesting: z.number().int().nonnegative(),
  distinctValues: z.number().int().nonnegative(),
  /** Fraction of k model answers that were fully right, when a model was asked. */
  passRate: z.number().min(0).max(1).nullable().default(null),
  k: z.number().int().nonnegative().default(0),
  /** A sample that teaches little (≤ 2 lines run, or the result is one of the arguments); a harvest caps their share. */
  trivial: z.enum(['few_lines', 'identity']).optional(),
});
export type Difficulty = z.infer<typeof DifficultySchema>;

/** One question with its ground truth; the full shape is owned by the question generator. */
export const RecordQuestionSchema = z.object({ id: z.string().optional(), kind: z.string() }).passthrough();

/** A model's answer to the sample's prompt with the judge's reward. */
export const ModelAnswerSchema = z.object({
  model: z.string(),
  text: z.string(),
  reward: z.number(),
  rIo: z.number().nullable(),
  rWhite: z.number().nullable(),
  /** Per-question verdicts as the judge returned them. */
  breakdown: z.array(z.unknown()).default([]),
});
export type ModelAnswer = z.infer<typeof ModelAnswerSchema>;

/** One step of the run as a world-model frame: the line about to run and the locals before it. */
export const TraceFrameSchema = z.object({
  line: z.number().int(),
  source: z.string(),
  event: z.string(),
  fn: z.string(),
  locals: z.record(z.string()),
});
export type TraceFrame = z.infer<typeof TraceFrameSchema>;

export const SplitSchema = z.enum(['train', 'validation', 'test']);
export type Split = z.infer<typeof SplitSchema>;

export const RecordSchema = z.object({
  schema: z.literal(SAMPLE_SCHEMA_VERSION),
  /** sha256 of normalised code + entry + question set (see recordId). */
  id: z.string().regex(/^[0-9a-f]{64}$/),
  provenance: ProvenanceSchema,
  /** The self-contained program: the function plus what it needs from its module. */
  code: z.string(),
  /** The entry call, e.g. `bisect_left([1, 2, 3], 2)`. */
  entry: z.string(),
  /** The captured result, reproduced by the standalone run. */
  result: z.object({ repr: z.string(), type: z.string() }),
  trace: z.object({
    /** sha256 of the trace JSON the questions were built from. */
    digest: z.string(),
    steps: z.number().int().nonnegative(),
    python: z.string(),
    /**
     * PYTHONHASHSEED the traced run used (a harvest: 0 unless --hash-seed);
     * absent when unknown (the editor's "Add to dataset").
     */
    hashSeed: z.number().int().nonnegative().optional(),
    /** Every question's truth was the same under these other seeds and a second run (harvest). */
    confirmedSeeds: z.array(z.number().int().nonnegative()).optional(),
    /**
     * How the traced run was isolated (the trace's python.isolation,
     * docs/security.md); absent for traces that did not say.
     */
    isolation: IsolationSchema.optional(),
  }),
  questions: z.array(RecordQuestionSchema),
  /** The ground truth as the reward function reads it: a JSON string (format execverify.truth/1). */
  groundTruth: z.string(),
  /** The rendered prompt (chat messages). */
  prompt: z.array(ChatMessageSchema).min(1),
  /** The ideal answer text in the prompt's answer format, derived from the ground truth (for SFT). */
  reference: z.string().nullable().default(null),
  answers: z.array(ModelAnswerSchema).default([]),
  difficulty: DifficultySchema,
  split: SplitSchema,
  hashes: z.object({
    /** Exact-duplicate key: normalised code + entry. */
    exact: z.string(),
    /** Near-duplicate key: AST-normalised code (names, docstrings, comments erased) + arguments. */
    near: z.string(),
    /** Identifies the captured call (file, function, entry) so a resumed harvest skips it. */
    candidate: z.string(),
  }),
  /** Trace frames for world-model style training (bounded). */
  frames: z.array(TraceFrameSchema).default([]),
  /** Values or code that were redacted for credentials (counted, never stored in clear). */
  redactions: z.number().int().nonnegative().default(0),
});
export type SampleRecord = z.infer<typeof RecordSchema>;
/**
 * What a producer supplies: everything but the id, which is derived. Hashes,
 * split and difficulty may be left out (the editor saving one sample does):
 * they default to exact-content hashes, a split by function, and an unknown
 * (zero) difficulty.
 */
export type SampleInput = Omit<z.input<typeof RecordSchema>, 'id' | 'schema' | 'hashes' | 'split' | 'difficulty'> &
  Partial<Pick<z.input<typeof RecordSchema>, 'hashes' | 'split' | 'difficulty'>>;

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Code compared for identity: line endings, trailing spaces and blank lines do not matter. */
export function normaliseCode(code: string): string {
  return code
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .filter((line) => line.length > 0)
    .join('\n');
}

/** JSON with object keys sorted, so equal content always hashes the same. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The content address: the same code, entry and questions always give the same id. */
export function recordId(code: string, entry: string, questions: unknown[]): string {
  return sha256(`${normaliseCode(code)}\u0000${entry.trim()}\u0000${stableJson(questions)}`);
}

/** Exact-duplicate key of a (code, entry) pair, whatever questions were asked about it. */
export function exactKey(code: string, entry: string): string {
  return sha256(`${normaliseCode(code)}\u0000${entry.trim()}`);
}

/**
 * The split of a function: a stable hash of (project, file, function) picks
 * the bucket, so every sample of one function lands in the same split and no
 * function leaks between train and test.
 */
export function splitFor(
  provenance: Pick<Provenance, 'project' | 'file' | 'function'>,
  fractions: { validation: number; test: number } = { validation: 0, test: 0.1 },
): Split {
  const h = sha256(`${provenance.project}\u0000${provenance.file}\u0000${provenance.function}`);
  const u = parseInt(h.slice(0, 8), 16) / 0x1_0000_0000;
  if (u < fractions.test) return 'test';
  if (u < fractions.test + fractions.validation) return 'validation';
  return 'train';
}

const UNKNOWN_DIFFICULTY = { score: 0, steps: 0, branches: 0, loopIterations: 0, nesting: 0, distinctValues: 0 };

/** Builds a validated record from its parts; throws a ZodError naming the bad field. */
export function makeRecord(input: SampleInput): SampleRecord {
  const exact = exactKey(input.code, input.entry);
  return RecordSchema.parse({
    ...input,
    schema: SAMPLE_SCHEMA_VERSION,
    id: recordId(input.code, input.entry, input.questions as unknown[]),
    hashes: input.hashes ?? { exact, near: exact, candidate: exact },
    split: input.split ?? splitFor(input.provenance),
    difficulty: input.difficulty ?? UNKNOWN_DIFFICULTY,
  });
}
