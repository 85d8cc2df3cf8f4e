// CRUXEval online: each sample asked with the official direct prompt (the
// built-in cruxeval-output / cruxeval-input templates, text completion, stop
// at [/ANSWER]), n samples at the given temperature, through the ask road;
// the answers read by the official post-processing, kept in the official
// generations format ({"sample_N": ["answer", ...]}) for the official scorer.
import { answerPrompt, type AnswerablePrompt } from '../ask';
import type { Provider } from '../model/provider';
import { renderPrompts, type Template } from '../model/templates';
import type { Question } from '../questions/schema';

export interface CruxevalRow {
  id: string;
  code: string;
  input: string;
  output: string;
}

/** The official prompt for one sample: output prediction asks `assert f(input) == ??`, input prediction `assert f(??) == output`. */
export function cruxevalPrompt(row: CruxevalRow, mode: 'output' | 'input', template: Template): AnswerablePrompt {
  const truth = { scorer: 'cruxeval' as const, code: row.code, input: row.input, expected: row.output };
  const question: Question =
    mode === 'output'
      ? { kind: 'output', id: row.id, call: `f(${row.input})`, truth }
      : { kind: 'input', id: row.id, call: `f(${row.input})`, outputRepr: row.output, truth };
  const { prompts } = renderPrompts(template, [question], { code: row.code, call: `f(${row.input})` });
  const p = prompts[0];
  if (!p) throw new Error(`template ${template.name} does not ask ${mode} questions`);
  return { ...p, baseline: [{ kind: mode }] };
}

/**
 * Ask every row (n samples each) and read each sample by the official
 * post-processing; a row the provider fails keeps no answers (reported). A
 * few lanes keep the client's own concurrency limit busy.
 */
export async function askCruxeval(
  provider: Provider,
  rows: readonly CruxevalRow[],
  mode: 'output' | 'input',
  template: Template,
  options: { samples: number; signal?: AbortSignal; onAnswered?: () => void; lanes?: number },
): Promise<{ generations: Record<string, string[]>; failed: Map<string, string> }> {
  const generations: Record<string, string[]> = {};
  const failed = new Map<string, string>();
  let next = 0;
  const lane = async () => {
    while (next < rows.length) {
      const row = rows[next++]!;
      try {
        const answered = await answerPrompt(provider, cruxevalPrompt(row, mode, template), {
          samples: options.samples,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        generations[row.id] = answered.samples.map((s) => s.parsed.answers[0] ?? '');
      } catch (err) {
        if (options.signal?.aborted) throw err;
        failed.set(row.id, err instanceof Error ? err.message : String(err));
        generations[row.id] = [];
      }
      options.onAnswered?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.lanes ?? 32, rows.length) }, lane));
  return { generations: Object.fromEntries(rows.map((r) => [r.id, generations[r.id] ?? []])), failed };
}
