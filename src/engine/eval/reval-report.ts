// What a REval run shows: the numbers REval prints, accuracy per task (all
// probes and well-defined ones), by program kind and by how long the run was,
// the next-line mistakes as predicted line against real line, and the worst
// wrong answers with their input's trace beside the report.
import { traceFileName, type ReportExample, type ReportInput } from '../report';
import type { Trace } from '../trace/schema';
import { REVAL_TASKS, revalMetrics, type RevalTask, type ScoredProbe } from './reval';

const unwrap = (s: string) => s.replace(/^\[ANSWER\]\n?/, '').replace(/\n?\[\/ANSWER\]$/, '');

function perTask(scored: readonly ScoredProbe[]) {
  return REVAL_TASKS.map((task) => {
    const xs = scored.filter((s) => s.task === task);
    return { label: task, n: xs.length, correct: xs.filter((x) => x.verdict.correct).length };
  });
}

/** Inputs in five buckets of their run's length (REval states), shortest first: a proxy for difficulty. */
function byLength(scored: readonly ScoredProbe[]) {
  const lengths = [...new Set(scored.filter((s) => s.states !== undefined).map((s) => s.states!))].sort((a, b) => a - b);
  if (!lengths.length) return [];
  const edges = [0.2, 0.4, 0.6, 0.8, 1].map((q) => lengths[Math.min(lengths.length - 1, Math.ceil(q * lengths.length) - 1)]!);
  const uniq = [...new Set(edges)];
  return uniq.map((hi, i) => {
    const lo = i === 0 ? 0 : uniq[i - 1]! + 1;
    const xs = scored.filter((s) => s.states !== undefined && s.states >= lo && s.states <= hi);
    return { label: lo === hi ? `${hi} states` : `${lo}–${hi} states`, n: xs.length, correct: xs.filter((x) => x.verdict.correct).length };
  });
}

/** Where line `n` is from the asked line `at`: what a next-line answer says about control flow. */
function flowLabel(n: number, at: number): string {
  if (n === -1) return 'end (-1)';
  if (n === -2) return 'no such line';
  if (n === at + 1) return 'the line below';
  return n <= at ? 'back (loop, call)' : 'ahead (jump)';
}

function question(s: ScoredProbe): string {
  if (s.task === 'output') return `output of ${s.taskId} input ${s.inputIdx}`;
  return `${s.task}: line ${s.line}${s.task === 'state' ? `, ${s.variable}` : ''}`;
}

/**
 * The report of one run. `traces` maps `<task_id>/<input_idx>` to the input's
 * trace; the worst examples name theirs (`traces/<file>`) and the returned map
 * holds the files to write beside the report.
 */
export function revalReport(
  scored: readonly ScoredProbe[],
  options: { title: string; subtitle?: string; created: string; traces?: ReadonlyMap<string, Trace>; worst?: number },
): { report: ReportInput; traces: Map<string, Trace> } {
  const defined = scored.filter((s) => s.defined);
  const all = revalMetrics(scored);
  const m = revalMetrics(defined);
  const metric = (name: string, value: number | null, n?: number, unit: 'ratio' | 'percent' | 'count' = 'ratio') => ({
    name,
    value,
    unit,
    ...(n !== undefined ? { n } : {}),
  });
  const metrics = [
    metric('coverage accuracy', m.coverage.acc, m.coverage.n),
    metric('coverage precision', m.coverage.prec),
    metric('coverage recall', m.coverage.rec),
    metric('coverage F1', m.coverage.f1),
    metric('state accuracy', m.state.acc, m.state.n),
    metric('path accuracy', m.path.acc, m.path.n),
    metric('output accuracy', m.output.acc, m.output.n),
    metric('consistency', m.consistency, undefined, 'percent'),
    metric('well-defined probes', defined.length, undefined, 'count'),
    metric('all probes', scored.length, undefined, 'count'),
    metric('consistency, all probes', all.consistency, undefined, 'percent'),
  ];
  const kinds = (['function', 'class'] as const).map((kind) => {
    const xs = defined.filter((s) => s.program === kind);
    return { label: kind === 'function' ? 'HumanEval functions' : 'ClassEval classes', n: xs.length, correct: xs.filter((x) => x.verdict.correct).length };
  });
  // Next-line mistakes, answered against real, by where the line is from the asked line L (line numbers of
  // different programs do not compare; where control goes does): the line below, back (a loop), ahead (a jump), the end.
  const cells = new Map<string, { predicted: string; actual: string; count: number }>();
  for (const s of defined) {
    if (s.task !== 'path' || s.verdict.correct || s.line === undefined) continue;
    const lines = s.verdict.lines ?? (s.verdict.line !== undefined ? [s.verdict.line] : [-2]);
    const actual = flowLabel(((s.truth.next as number[] | undefined) ?? [-1])[0]!, s.line);
    const predicted = lines.length > 1 ? 'text on several lines' : flowLabel(lines[0]!, s.line);
    const k = `${predicted}\u0000${actual}`;
    const c = cells.get(k) ?? { predicted, actual, count: 0 };
    c.count++;
    cells.set(k, c);
  }
  // Worst examples: wrong answers on well-defined probes, from the programs with the most of them, every task in turn.
  const wrong = defined.filter((s) => !s.verdict.correct);
  const perProgram = new Map<string, number>();
  for (const s of wrong) perProgram.set(s.taskId, (perProgram.get(s.taskId) ?? 0) + 1);
  const ordered = [...wrong].sort((a, b) => perProgram.get(b.taskId)! - perProgram.get(a.taskId)! || a.key.localeCompare(b.key));
  const picked: ScoredProbe[] = [];
  const want = options.worst ?? 24;
  for (const task of REVAL_TASKS.concat(REVAL_TASKS, REVAL_TASKS, REVAL_TASKS, REVAL_TASKS, REVAL_TASKS) as RevalTask[]) {
    const next = ordered.find((s) => s.task === task && !picked.includes(s));
    if (next) picked.push(next);
    if (picked.length >= want) break;
  }
  const files = new Map<string, Trace>();
  const examples: ReportExample[] = picked.map((s) => {
    const trace = options.traces?.get(`${s.taskId}/${s.inputIdx}`);
    const file = traceFileName(`${s.taskId}/${s.inputIdx}`);
    if (trace) files.set(file, trace);
    return {
      id: s.key,
      group: s.task,
      question: question(s),
      answer: s.answer,
      expected: unwrap(s.reference),
      reason: s.verdict.reason + (typeof s.verdict.detail === 'string' ? ` (${s.verdict.detail})` : ''),
      ...(trace ? { trace: `traces/${file}` } : {}),
      ...(s.line !== undefined ? { line: s.line } : {}),
    };
  });
  return {
    report: {
      schema: 'execverify.report/1',
      title: options.title,
      ...(options.subtitle ? { subtitle: options.subtitle } : {}),
      created: options.created,
      metrics,
      groups: [
        { name: 'Accuracy per task (well-defined probes)', rows: perTask(defined) },
        { name: 'Accuracy per task (all probes, as REval counts)', rows: perTask(scored) },
        { name: 'Accuracy by program kind', about: 'Well-defined probes of the four tasks together.', rows: kinds },
        {
          name: 'Accuracy by run length',
          about: "How many REval states the input's run has, in five buckets: a proxy for difficulty. Well-defined probes.",
          rows: byLength(defined),
        },
      ],
      confusion: {
        title: 'Next-line mistakes: where the answered line is against where the real next line is (from the asked line)',
        predicted: 'answered',
        actual: 'real next line',
        cells: [...cells.values()],
      },
      examples,
      notes: [
        `${scored.length - defined.length} of ${scored.length} probes are not well defined (the run raised here, a value that is not a literal, a value not recorded whole); they count in "all probes" only. See docs/evaluation.md#well-defined-probes.`,
        'A replay link opens the trace of the input: in VS Code ("ExecVerify: Open Evaluation Report") it starts the replay debugger; elsewhere, replay it with a launch configuration of type "execverify" and "traceFile".',
      ],
    },
    traces: files,
  };
}
