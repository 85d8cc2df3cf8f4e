// REval (Chen et al., ICSE 2025) on our tracer and judge: its data read as it
// is (data/DREval_data.jsonl, data/DREval_tasks.jsonl), every input run under
// our tracer, REval's truth read from the trace (reval-truth.ts), answers
// scored by REval's rules or ours (python-tracer/execverify/reval.py), and the
// metrics REval prints: accuracy per task, coverage P/R/F1, consistency.
import * as path from 'node:path';
import { z } from 'zod';
import type { JudgeClient, RevalItem } from '../judge/client';
import type { Verdict } from '../judge/schema';
import { decodeTrace } from '../trace/decode';
import type { TraceJob } from '../trace/runner';
import type { Trace, Value } from '../trace/schema';
import { readJsonlRows } from './jsonl';
import { probeTruth, revalStates, type ProbeTruth } from './reval-truth';

export const REVAL_TASKS = ['coverage', 'state', 'path', 'output'] as const;
export type RevalTask = (typeof REVAL_TASKS)[number];
export type RevalMode = 'reval' | 'strict';

export const RevalDataRowSchema = z.object({
  task_id: z.string(),
  entry_point: z.string(),
  code: z.string(),
  inputs: z.array(z.string()),
  outputs: z.array(z.string()),
  /** ClassEval programs carry their unittest module; HumanEval functions have none. */
  test: z.string().nullable(),
});
export const RevalTaskRowSchema = z.object({
  task_id: z.string(),
  idx: z.number().int().nonnegative(),
  tasks: z.array(
    z.object({
      input_idx: z.number().int().nonnegative(),
      task: z.array(z.object({ lineno: z.number().int().positive(), var: z.string() })),
      output_pred: z.string(),
    }),
  ),
});
export type RevalDataRow = z.infer<typeof RevalDataRowSchema>;
export type RevalTaskRow = z.infer<typeof RevalTaskRowSchema>;

/** One program of the benchmark with its inputs and probes. */
export interface RevalProgram {
  idx: number;
  data: RevalDataRow;
  tasks: RevalTaskRow['tasks'];
}

export class RevalDataError extends Error {
  override name = 'RevalDataError';
}

function readJsonl<T>(file: string, schema: z.ZodType<T>): Promise<T[]> {
  return readJsonlRows(file, schema, { name: file, readHint: "--data is a checkout of REval's repository", error: (m) => new RevalDataError(m) });
}

/** The benchmark from a checkout of REval's repository (or a folder with its two data files). */
export async function loadReval(dir: string): Promise<RevalProgram[]> {
  const data = await readJsonl(path.join(dir, 'data', 'DREval_data.jsonl'), RevalDataRowSchema);
  const tasks = await readJsonl(path.join(dir, 'data', 'DREval_tasks.jsonl'), RevalTaskRowSchema);
  return tasks.map((t) => {
    const row = data[t.idx];
    if (!row || row.task_id !== t.task_id) throw new RevalDataError(`DREval_tasks.jsonl: ${t.task_id} has no program at index ${t.idx} of DREval_data.jsonl`);
    for (const p of t.tasks)
      if (row.test === null && p.input_idx >= row.inputs.length) throw new RevalDataError(`${t.task_id}: input ${p.input_idx} is not in DREval_data.jsonl`);
    return { idx: t.idx, data: row, tasks: t.tasks };
  });
}

/** `"<task_id>/<input_idx>/<task>/<probe_idx>"`, the key of one answer in a generations file (probe 0 for output). */
export function probeKey(taskId: string, inputIdx: number, task: RevalTask, probe: number): string {
  return `${taskId}/${inputIdx}/${task}/${probe}`;
}

const MARK = '__reval_mark__';

/** The test class REval runs for input i: the i-th class named `<Class>Test…` that is a TestCase, in definition order. */
const testPattern = (p: RevalProgram) => `${p.data.entry_point}Test.*`;

/**
 * The trace job of one input. A function is called with the input's
 * arguments; a class runs the first test method of its test class after
 * setUp, as REval does, from code compiled under another file name (not
 * traced). A marker function appended to the class code starts REval's
 * recording where it does: after setUp.
 */
export function revalJob(p: RevalProgram, inputIdx: number): TraceJob {
  if (p.data.test === null) {
    return { source: p.data.code, path: `${p.data.entry_point}.py`, entry: { kind: 'call', expr: `${p.data.entry_point}(*${p.data.inputs[inputIdx]!})` } };
  }
  const driver = [
    'import re as _re, unittest as _ut',
    `exec(compile(${pyString(p.data.test)}, '<reval-test>', 'exec'), globals())`,
    `_c = [v for k, v in list(globals().items()) if isinstance(v, type) and _re.match(${pyString(testPattern(p))}, k) is not None and issubclass(v, _ut.TestCase)][${inputIdx}]`,
    "_n = [k for k in _c.__dict__ if k.startswith('test')][0]",
    '_o = _c()',
    "if hasattr(_o, 'setUp'):",
    '    _o.setUp()',
    `${MARK}()`,
    'getattr(_o, _n)()',
  ].join('\n');
  return {
    source: `${p.data.code.replace(/\n*$/, '\n')}\n\ndef ${MARK}():\n    pass\n`,
    path: `${p.data.entry_point}.py`,
    entry: { kind: 'call', expr: `exec(compile(${pyString(driver)}, '<reval-driver>', 'exec'), globals())` },
  };
}

/** A Python string literal for any text (JSON's escapes are Python's, for the characters JSON escapes). */
function pyString(s: string): string {
  return JSON.stringify(s)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** One probe of one input: where it sits, its truth, and the item the scorer reads. */
export interface RevalProbe {
  key: string;
  taskId: string;
  idx: number;
  inputIdx: number;
  task: RevalTask;
  probe: number;
  line?: number;
  variable?: string;
  /** A well-defined probe: our truth is REval's, read whole from a finished run, and answers are read alike (reval-truth.ts). */
  defined: boolean;
  why?: string;
  truth: Record<string, unknown>;
  /** The answer a perfect model writes in REval's format (REval's own for output). */
  reference: string;
  /** A HumanEval function or a ClassEval class. */
  program: 'function' | 'class';
  /** How long the input's run was (REval states): the report's difficulty. */
  states?: number;
}

/** REval's answers to one input: the completed test (ClassEval's inputs are that) or the assertion with the recorded output. */
function outputReference(p: RevalProgram, pair: RevalTaskRow['tasks'][number]): string {
  return p.data.test === null ? pair.output_pred.replace('??', p.data.outputs[pair.input_idx] ?? '??') : (p.data.inputs[pair.input_idx] ?? '').trimEnd();
}

function stateReference(t: ProbeTruth): string {
  const v = t.values?.[0];
  return v ? `${v.repr}; ${v.type.replace(/^builtins\./, '')}` : 'Nil';
}

function pathReference(t: ProbeTruth, lines: readonly string[]): string {
  const n = t.next[0]!;
  return n === -1 ? '-1' : (lines[n - 1] ?? '').trim();
}

const wrap = (s: string) => `[ANSWER]\n${s}\n[/ANSWER]`;

/** Every probe of one input, from its trace (an Error when it could not be traced: no probe is then well defined). */
export function probesOf(p: RevalProgram, pair: RevalTaskRow['tasks'][number], trace: Trace | Error): RevalProbe[] {
  const code = p.data.code;
  const lines = code.split('\n');
  const where: { taskId: string; idx: number; inputIdx: number; program: 'function' | 'class'; states?: number } = {
    taskId: p.data.task_id,
    idx: p.idx,
    inputIdx: pair.input_idx,
    program: p.data.test === null ? 'function' : 'class',
  };
  const out: RevalProbe[] = [];
  let truths: ProbeTruth[];
  let value: Value | undefined;
  let ran = false;
  let length: number | undefined;
  if (trace instanceof Error) {
    truths = pair.task.map(() => ({ covered: false, next: [-1], values: null, defined: false, why: `not traced: ${trace.message}` }));
  } else {
    const d = decodeTrace(trace);
    let from = 0;
    let maxLine = Number.MAX_SAFE_INTEGER;
    if (p.data.test !== null) {
      const mark = d.steps.findIndex((s) => s.fn === MARK && s.event === 'return');
      from = mark + 1;
      maxLine = lines.length;
    }
    const states = revalStates(d, from, maxLine);
    length = states.length;
    truths = pair.task.map((t) => probeTruth(trace, d, states, t.lineno, t.var));
    ran = trace.outcome.kind === 'returned';
    if (trace.outcome.kind === 'returned' && p.data.test === null) value = trace.outcome.value;
  }
  if (length !== undefined) Object.assign(where, { states: length });
  pair.task.forEach((t, i) => {
    const truth = truths[i]!;
    const base = { ...where, probe: i, line: t.lineno, variable: t.var, defined: truth.defined, ...(truth.why ? { why: truth.why } : {}) };
    out.push({
      ...base,
      key: probeKey(p.data.task_id, pair.input_idx, 'coverage', i),
      task: 'coverage',
      truth: { covered: truth.covered },
      reference: wrap(truth.covered ? 'YES' : 'NO'),
    });
    out.push({
      ...base,
      key: probeKey(p.data.task_id, pair.input_idx, 'state', i),
      task: 'state',
      truth: truth.values ? { values: truth.values } : { nil: true },
      reference: wrap(stateReference(truth)),
    });
    out.push({
      ...base,
      key: probeKey(p.data.task_id, pair.input_idx, 'path', i),
      task: 'path',
      truth: { next: truth.next, code },
      reference: wrap(pathReference(truth, lines)),
    });
  });
  const call = /^assert\s+(.*?)\s*==\s*\?\?\s*$/s.exec(pair.output_pred)?.[1];
  const outputTruth: Record<string, unknown> =
    p.data.test === null
      ? { program: code, input: pair.output_pred, ...(call ? { call } : {}), ...(value ? { value } : {}) }
      : { program: code, input: pair.output_pred, test: p.data.test, pattern: testPattern(p), index: pair.input_idx };
  out.push({
    ...where,
    key: probeKey(p.data.task_id, pair.input_idx, 'output', 0),
    task: 'output',
    probe: 0,
    // REval's own test code: defined when the program ran here (a missing module or an API gone makes it raise).
    defined: ran,
    ...(ran ? {} : { why: trace instanceof Error ? `not traced: ${trace.message}` : `the run ended by ${trace.outcome.kind}` }),
    truth: outputTruth,
    reference: wrap(outputReference(p, pair)),
  });
  return out;
}

export interface ScoredProbe extends RevalProbe {
  answer: string;
  verdict: Verdict;
}

/** Score answers (key → raw text; a missing key is an empty answer) by REval's rules or ours, in batches through the judge. */
export async function scoreProbes(
  judge: JudgeClient,
  probes: readonly RevalProbe[],
  answers: ReadonlyMap<string, string>,
  options: { mode: RevalMode; cot: boolean; timeoutS?: number; signal?: AbortSignal; onProgress?: (done: number) => void; batch?: number },
): Promise<ScoredProbe[]> {
  const out: ScoredProbe[] = [];
  const size = options.batch ?? 200;
  for (let i = 0; i < probes.length; i += size) {
    const chunk = probes.slice(i, i + size);
    const items: RevalItem[] = chunk.map((p) => ({ task: p.task, answer: answers.get(p.key) ?? '', truth: p.truth }));
    const verdicts = await judge.revalScore(
      items,
      { mode: options.mode, cot: options.cot, ...(options.timeoutS ? { timeoutS: options.timeoutS } : {}) },
      options.signal,
    );
    chunk.forEach((p, j) => out.push({ ...p, answer: items[j]!.answer, verdict: verdicts[j]! }));
    options.onProgress?.(out.length);
  }
  return out;
}

/** What REval prints for each task, plus the count of probes behind each number. */
export interface RevalMetrics {
  coverage: { n: number; acc: number; prec: number | null; rec: number | null; f1: number | null; tp: number; fp: number; tn: number; fn: number };
  state: { n: number; acc: number };
  path: { n: number; acc: number };
  output: { n: number; acc: number };
  /** REval's consistency score in percent: 1 / 0.5 / 0.25 / 0.125 for the right prefixes of coverage → state → path → output. */
  consistency: number;
}

const ratio = (a: number, b: number) => (b ? a / b : 0);

/** The metrics over scored probes (all of them, as REval counts; filter first for a subset). */
export function revalMetrics(scored: readonly ScoredProbe[]): RevalMetrics {
  const by = (t: RevalTask) => scored.filter((s) => s.task === t);
  let tp = 0,
    fp = 0,
    tn = 0,
    fn = 0;
  for (const s of by('coverage')) {
    const want = Boolean((s.truth as { covered: boolean }).covered);
    const got = s.verdict.correct ? want : !want;
    if (got && want) tp++;
    else if (got && !want) fp++;
    else if (!got && want) fn++;
    else tn++;
  }
  const prec = tp + fp ? tp / (tp + fp) : null;
  const rec = tp + fn ? tp / (tp + fn) : null;
  const f1 = prec === null || rec === null ? null : prec + rec === 0 ? 0 : (2 * prec * rec) / (prec + rec);
  const acc = (t: RevalTask) => {
    const xs = by(t);
    return { n: xs.length, acc: ratio(xs.filter((x) => x.verdict.correct).length, xs.length) };
  };
  // Consistency: per probe, in order, with the output of its input.
  const outputOk = new Map<string, boolean>(by('output').map((s) => [`${s.taskId}/${s.inputIdx}`, s.verdict.correct] as const));
  const stateOk = new Map<string, boolean>(by('state').map((s) => [`${s.taskId}/${s.inputIdx}/${s.probe}`, s.verdict.correct] as const));
  const pathOk = new Map<string, boolean>(by('path').map((s) => [`${s.taskId}/${s.inputIdx}/${s.probe}`, s.verdict.correct] as const));
  let score = 0;
  const cov = by('coverage');
  for (const c of cov) {
    const k = `${c.taskId}/${c.inputIdx}/${c.probe}`;
    const [a, b, p, o] = [c.verdict.correct, stateOk.get(k) === true, pathOk.get(k) === true, outputOk.get(`${c.taskId}/${c.inputIdx}`) === true];
    if (a && b && p && o) score += 1;
    else if (a && b && p) score += 0.5;
    else if (a && b && !o) score += 0.25;
    else if (a && !p && !o) score += 0.125;
  }
  return {
    coverage: { n: cov.length, acc: ratio(tp + tn, tp + tn + fp + fn), prec, rec, f1, tp, fp, tn, fn },
    state: acc('state'),
    path: acc('path'),
    output: acc('output'),
    consistency: cov.length ? (100 * score) / cov.length : 0,
  };
}
