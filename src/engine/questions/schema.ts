// A white-box question about one recorded run, with its ground truth attached
// (SEMANTICS §3). One schema for the concept; the truth shapes are the ones the
// Python judge reads (src/engine/judge/schema.ts).
import { z } from 'zod';
import { TruthByKind } from '../judge/schema';

const Where = {
  /** Stable id inside a question set (kind + line + k + variable). */
  id: z.string(),
  /** Function (qualified name) and frame id the question is about. */
  fn: z.string(),
  frame: z.number().int().nonnegative(),
  /** The line L the question is about, and its source text (stripped). */
  line: z.number().int().positive(),
  lineText: z.string(),
};

export const QuestionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('next_line'), ...Where, k: z.number().int().positive(), truth: TruthByKind.next_line }),
  z.object({ kind: z.literal('state'), ...Where, k: z.number().int().positive(), var: z.string(), truth: TruthByKind.state }),
  z.object({ kind: z.literal('state_any'), ...Where, var: z.string(), truth: TruthByKind.state_any }),
  z.object({ kind: z.literal('coverage'), ...Where, truth: TruthByKind.coverage }),
  z.object({
    kind: z.literal('output'),
    id: z.string(),
    /** The entry call as written in the assertion, e.g. `f([1, 2])`. */
    call: z.string(),
    truth: TruthByKind.output,
  }),
  z.object({
    kind: z.literal('input'),
    id: z.string(),
    call: z.string(),
    /** The output the call must produce, as Python source (its repr). */
    outputRepr: z.string(),
    truth: TruthByKind.input,
  }),
]);
export type Question = z.infer<typeof QuestionSchema>;
export type QuestionKind = Question['kind'];
export type WhiteBoxQuestion = Extract<Question, { kind: 'next_line' | 'state' | 'state_any' | 'coverage' }>;

export const QuestionSetSchema = z.array(QuestionSchema);
