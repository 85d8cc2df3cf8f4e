// Narrations of a recorded run (docs/self-simulation.md#narrations): a model
// writes one (or, without a model, the template narrator renders one, labelled
// as the template), and every checkable claim in it is checked against the
// trace by the Python checker (worker ops narration_check / narration_render).
import { z } from 'zod';
import type { WorkerRequester } from '../judge/client';
import type { ChatMessage } from '../model/prompt';
import type { AnswerSource } from '../synthesize/pipeline';
import type { Trace } from '../trace/schema';

export const NARRATE_PROMPT_VERSION = 'simulate-narrate@1';

export const NarrationClaimSchema = z
  .object({
    sentence: z.string(),
    kind: z.enum(['state', 'branch', 'loop', 'return', 'print', 'output']),
    verdict: z.enum(['true', 'false', 'unverifiable']),
    reason: z.string(),
    /** What the run says, when the checker could read it. */
    truth: z.string().optional(),
  })
  .passthrough();

export const NarrationCheckSchema = z.object({
  verdict: z.enum(['verified', 'rejected', 'unchecked']),
  true: z.number().int().nonnegative(),
  false: z.number().int().nonnegative(),
  unverifiable: z.number().int().nonnegative(),
  /** The narration was longer than the checker reads (its tail is unchecked). */
  cut: z.boolean(),
  claims: z.array(NarrationClaimSchema),
  /** The narration with each false sentence marked. */
  marked: z.string(),
});
export type NarrationCheck = z.infer<typeof NarrationCheckSchema>;

function checked<S extends z.ZodTypeAny>(op: string, schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new Error(`${op} returned an unexpected result (${parsed.error.issues[0]?.message}): python-tracer and the extension differ`);
  return parsed.data;
}

export async function checkNarration(workers: WorkerRequester, trace: Trace, narration: string, signal?: AbortSignal): Promise<NarrationCheck> {
  return checked('narration_check', NarrationCheckSchema, await workers.request('narration_check', { trace, narration }, signal, 60_000));
}

export async function templateNarration(workers: WorkerRequester, trace: Trace, signal?: AbortSignal): Promise<string> {
  return checked('narration_render', z.object({ narration: z.string() }), await workers.request('narration_render', { trace }, signal, 60_000)).narration;
}

function entryText(trace: Trace): string {
  const e = trace.entry;
  return e.kind === 'call' ? e.expr : e.kind === 'script' ? 'the file, run as a script' : `${e.target}(${e.args})`;
}

/** The request for a narration: the program, how it is entered, its input, and the sentence forms the checker reads. */
export function narrateMessages(trace: Trace): ChatMessage[] {
  const source = (trace.files[0]?.source ?? '').replace(/\n$/, '');
  const stdin = trace.stdin ? `\nIts standard input: ${JSON.stringify(trace.stdin.text)}` : '';
  const user =
    `Narrate the execution of this Python program, entered as ${entryText(trace)}.${stdin}\n\n\`\`\`python\n${source}\n\`\`\`\n\n` +
    'Simulate the run step by step. Write one plain sentence per fact, in these forms where they fit, with values in backticks:\n' +
    '- After line L, `x` is `V`. (or: After line L runs for the 2nd time, `x` is `V`.)\n' +
    '- The condition on line L is true (or false) the 1st time.\n' +
    '- The loop on line L runs N times.\n' +
    '- The function returns `V`.\n' +
    '- The output is `"TEXT"`.';
  return [{ role: 'user', content: user }];
}

export interface Narrated {
  /** Who wrote it: a model (its label), a file, or the template narrator (no model). */
  by: { kind: 'model' | 'file' | 'template'; label: string };
  narration: string;
  check: NarrationCheck;
}

/** Where a narration comes from: a model, a text already written, or (none) the template narrator. */
export type Narrator = { model: AnswerSource } | { text: string; label: string } | undefined;

/** A narration of `trace`, checked claim by claim. */
export async function narrate(workers: WorkerRequester, trace: Trace, narrator: Narrator, signal?: AbortSignal): Promise<Narrated> {
  let by: Narrated['by'];
  let narration: string;
  if (narrator && 'model' in narrator) {
    by = { kind: 'model', label: narrator.model.label };
    narration = (await narrator.model.answer(narrateMessages(trace), signal)).texts[0] ?? '';
  } else if (narrator) {
    by = { kind: 'file', label: narrator.label };
    narration = narrator.text;
  } else {
    by = { kind: 'template', label: 'template narrator' };
    narration = await templateNarration(workers, trace, signal);
  }
  return { by, narration, check: await checkNarration(workers, trace, narration, signal) };
}
