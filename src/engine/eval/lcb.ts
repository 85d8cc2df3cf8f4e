// LiveCodeBench's code-execution scenario, scored by its published rules
// (lcb_runner/evaluation/compute_code_execution_metrics.py, written from its
// rules): the answer is read from the model's text (extract_execution_code's
// rule); an answer that contains the input call is left out; the others run
// `assert <output> == <answer>` after the program with the standard-library
// names LiveCodeBench predefines, in our sandbox (3 s each); pass@1 of a
// problem is right / run, and 0 when every answer was left out.
import { z } from 'zod';
import type { JudgeClient } from '../judge/client';

/** One problem of the execution scenario (livecodebench/execution-v2), as its rows are published. */
export const LcbRowSchema = z
  .object({
    id: z.string().optional(),
    question_id: z.union([z.string(), z.number()]).optional(),
    code: z.string(),
    /** The call, e.g. `minOperations(nums = [1, 2])`. */
    input: z.string(),
    output: z.string(),
    function_name: z.string().optional(),
    difficulty: z.string().optional(),
  })
  .passthrough();
export type LcbRow = z.infer<typeof LcbRowSchema>;

/** A problem's key in a generations file: its `id`, else its `question_id`, else its position. */
export function lcbKey(row: LcbRow, index: number): string {
  return row.id ?? (row.question_id !== undefined ? String(row.question_id) : String(index));
}

/**
 * The names LiveCodeBench defines before every program (its BASE_IMPORTS):
 * the same modules and names, as data. numpy and pandas are imported when the
 * interpreter has them (LiveCodeBench's environment always does).
 */
const PRELUDE_IMPORTS: Record<string, string[]> = {
  itertools: ['accumulate', 'chain', 'combinations', 'count', 'permutations', 'product', 'groupby', 'islice', 'repeat', 'zip_longest', 'cycle'],
  copy: ['deepcopy'],
  string: ['ascii_lowercase'],
  math: ['floor', 'log2', 'log10', 'sqrt', 'comb', 'gcd', 'ceil', 'inf', 'isqrt', 'log', 'prod'],
  collections: ['defaultdict', 'deque', 'Counter', 'OrderedDict'],
  bisect: ['bisect', 'bisect_left', 'bisect_right', 'insort'],
  heapq: ['heappush', 'heappop', 'heapify', 'merge'],
  functools: ['reduce', 'cache', 'lru_cache', 'partial'],
  random: ['randrange', 'shuffle'],
  operator: ['itemgetter', 'sub', 'iand'],
  'os.path': ['commonprefix'],
  typing: ['List', 'Tuple', 'Dict', 'Set', 'Optional', 'Union', 'Any', 'Callable', 'Iterable', 'Iterator', 'Generator'],
};
const PRELUDE_MODULES = ['copy', 'string', 'math', 'collections', 'bisect', 'heapq', 'functools', 'random', 'itertools', 'operator', 're', 'sys'];

export const LCB_PRELUDE = [
  ...Object.entries(PRELUDE_IMPORTS).map(([mod, names]) => `from ${mod} import ${names.join(', ')}`),
  'from re import search as re_search',
  ...PRELUDE_MODULES.map((m) => `import ${m}`),
  'try:\n    import numpy as np\nexcept ImportError:\n    pass',
  'try:\n    import pandas as pd\nexcept ImportError:\n    pass',
].join('\n');

/** The answer in a model's text, by LiveCodeBench's rule: after [ANSWER] (chain of thought), after the first `==`, up to [/ANSWER] or the first line's end. */
export function lcbAnswer(text: string, cot = false): string {
  let s = text;
  if (cot && s.includes('[ANSWER]')) s = s.split('[ANSWER]')[1]!.trim();
  if (s.includes('==')) s = s.split('==')[1]!.trim();
  s = s.includes('[/ANSWER]') ? s.split('[/ANSWER]')[0]!.trim() : s.split('\n')[0]!.trim();
  return s.trim();
}

export interface LcbScored {
  key: string;
  row: LcbRow;
  /** The answers read from the generations, in order. */
  answers: string[];
  /** One verdict per answer that ran (answers holding the input call are left out); all false when none ran. */
  results: boolean[];
  /** Per answer: true / false, or null when it was left out for holding the input call. */
  perAnswer: (boolean | null)[];
  pass1: number;
}

/** Score every problem's generations (raw model texts) by LiveCodeBench's rules, the assertions in the sandbox. */
export async function scoreLcb(
  judge: JudgeClient,
  rows: readonly LcbRow[],
  generations: Readonly<Record<string, readonly string[]>>,
  options: { cot?: boolean; timeoutS?: number; signal?: AbortSignal; chunk?: number } = {},
): Promise<LcbScored[]> {
  const scored: LcbScored[] = rows.map((row, i) => {
    const key = lcbKey(row, i);
    const answers = (generations[key] ?? []).map((g) => lcbAnswer(g, options.cot));
    return { key, row, answers, results: [], perAnswer: answers.map(() => null), pass1: 0 };
  });
  const items: { at: [number, number]; item: { mode: 'official'; answer: string; expected: string; code: string; timeout_s: number } }[] = [];
  scored.forEach((s, i) =>
    s.answers.forEach((a, j) => {
      if (a.includes(s.row.input)) return; // LiveCodeBench leaves such an answer out
      items.push({
        at: [i, j],
        item: { mode: 'official', answer: a, expected: s.row.output, code: `${LCB_PRELUDE}\n${s.row.code}`, timeout_s: options.timeoutS ?? 3 },
      });
    }),
  );
  const size = options.chunk ?? 100;
  for (let k = 0; k < items.length; k += size) {
    const chunk = items.slice(k, k + size);
    const verdicts = await judge.evalExpr(
      chunk.map((c) => c.item),
      options.timeoutS,
      options.signal,
    );
    chunk.forEach((c, n) => (scored[c.at[0]]!.perAnswer[c.at[1]] = verdicts[n]!.correct));
  }
  for (const s of scored) {
    const ran = s.perAnswer.filter((x): x is boolean => x !== null);
    s.results = ran.length ? ran : s.answers.map(() => false);
    s.pass1 = s.results.length ? s.results.filter(Boolean).length / s.results.length : 0;
  }
  return scored;
}

/** pass@1 in percent, the mean over problems (as LiveCodeBench prints it). */
export function lcbPass1(scored: readonly LcbScored[]): number {
  return scored.length ? (100 * scored.reduce((a, s) => a + s.pass1, 0)) / scored.length : 0;
}
