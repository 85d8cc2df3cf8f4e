// Code-generation tasks (ExecVerify's stage 2) from any sample store,
// harvested or synthesized: "write this function" — its signature, its
// docstring without examples and the rest of its program as context — with
// the stored calls and their results as the hidden unit tests. Each task is a
// record of the usual shape (prompt, ground truth, split, provenance), so the
// exporters write it for verl, TRL and OpenRLHF unchanged; the reward is
// python-tracer/execverify/codegen_reward.py, behind the same entry points.
import { z } from 'zod';
import { normaliseCode, sha256, stableJson, type ChatMessage, type SampleRecord } from '../dataset/record';
import type { WorkerRequester } from '../judge/client';

export const CODEGEN_SCHEMA = 'execverify.codegen/1';

/** The ground truth of a task, as codegen_reward.load_truth reads it. */
export const CodegenTruthSchema = z.object({
  schema: z.literal(CODEGEN_SCHEMA),
  function: z.string().regex(/^[A-Za-z_]\w*$/),
  context: z.string(),
  tests: z
    .array(z.object({ call: z.string(), value: z.object({ repr: z.string(), type: z.string(), literal: z.boolean() }) }))
    .min(1)
    .max(64),
  timeout_s: z.number().positive().optional(),
});
export type CodegenTruth = z.infer<typeof CodegenTruthSchema>;

const TaskPartsSchema = z.object({
  problem: z.string().nullable(),
  signature: z.string().optional(),
  docstring: z.string().optional(),
  context: z.string().optional(),
  solution: z.string().optional(),
  values: z.array(z.object({ repr: z.string(), type: z.string(), literal: z.boolean() })),
});

export const CODEGEN_SYSTEM = 'You write Python functions. Your function is run against hidden unit tests.';

export function codegenPrompt(fn: string, parts: { signature: string; docstring: string; context: string }): ChatMessage[] {
  const doc = parts.docstring ? `\n    """${parts.docstring.replace(/"""/g, '\\"\\"\\"').replace(/\n/g, '\n    ')}"""` : '';
  const lines = [
    `Write the Python function \`${fn}\`.`,
    ...(parts.context ? ['', 'It lives in this module; you may use what it defines (do not repeat it):', '```python', parts.context, '```'] : []),
    '',
    'Its signature and documentation:',
    '```python',
    `${parts.signature}${doc}`,
    '```',
    '',
    `Answer with one fenced \`\`\`python block holding the whole function \`${fn}\` (and any new helper it needs).`,
  ];
  return [
    { role: 'system', content: CODEGEN_SYSTEM },
    { role: 'user', content: lines.join('\n') },
  ];
}

/**
 * One task per (program, function) of the store: up to `maxTests` of its
 * distinct calls (in a stable order) as tests. Functions that are not
 * top-level functions of their program (methods) are left out, counted.
 */
export async function codegenRecords(
  records: readonly SampleRecord[],
  workers: WorkerRequester,
  options: { maxTests?: number; signal?: AbortSignal } = {},
): Promise<{ records: SampleRecord[]; skipped: Record<string, number> }> {
  const maxTests = options.maxTests ?? 16;
  const groups = new Map<string, SampleRecord[]>();
  for (const r of [...records].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const fn = r.provenance.function;
    const key = `${normaliseCode(r.code)}\u0000${fn}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const list = [...groups.values()].map((group) => {
    const seen = new Set<string>();
    const tests = group
      .filter((r) => (seen.has(r.entry) ? false : (seen.add(r.entry), true)))
      .sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0))
      .slice(0, maxTests);
    return { base: group[0]!, tests };
  });
  const skipped: Record<string, number> = {};
  if (list.length === 0) return { records: [], skipped };
  const res = (await workers.request(
    'codegen_task',
    { items: list.map((g) => ({ code: g.base.code, function: g.base.provenance.function, results: g.tests.map((t) => [t.result.repr, t.result.type]) })) },
    options.signal,
  )) as { results: unknown[] };
  const out: SampleRecord[] = [];
  list.forEach((g, i) => {
    const parts = TaskPartsSchema.parse(res.results[i]);
    if (parts.problem) {
      const reason = parts.problem === 'no_function' ? 'not a top-level function (codegen)' : `${parts.problem} (codegen)`;
      skipped[reason] = (skipped[reason] ?? 0) + 1;
      return;
    }
    const fn = g.base.provenance.function;
    const truth: CodegenTruth = {
      schema: CODEGEN_SCHEMA,
      function: fn,
      context: parts.context!,
      tests: g.tests.map((t, k) => ({ call: t.entry, value: parts.values[k]! })),
    };
    out.push({
      ...g.base,
      id: sha256(`codegen\u0000${normaliseCode(g.base.code)}\u0000${fn}\u0000${stableJson(truth.tests)}`),
      entry: `codegen:${fn}`,
      questions: [{ id: 'codegen', kind: 'codegen', tests: truth.tests.length }],
      groundTruth: JSON.stringify(truth),
      prompt: codegenPrompt(fn, { signature: parts.signature!, docstring: parts.docstring!, context: parts.context! }),
      reference: `\`\`\`python\n${parts.solution!}\`\`\``,
      answers: [],
      frames: [],
    });
  });
  return { records: out, skipped };
}
