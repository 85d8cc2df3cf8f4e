// A model on a harvested or synthesized store: every record's own prompt
// asked through the ask road (k samples), every response rewarded by the
// judge from the record's ground truth (the reward trainers get), and the
// numbers an ML engineer asks first — accuracy per question kind, per
// difficulty decile, per project and function, the reward distribution,
// pass@k — for the model and, side by side, the trivial baseline.
import { answerPrompt, type AnswerablePrompt } from '../ask';
import type { SampleRecord } from '../dataset/record';
import { passAtK, type JudgeClient } from '../judge/client';
import { GroundTruthSchema, type Reward } from '../judge/schema';
import { chatPrompt } from '../model/prompt';
import type { BaselineQuestion, Provider } from '../model/provider';
import type { ReportExample, ReportGroup, ReportInput } from '../report';

/** The record's prompt as the ask road sends it; the baseline's view is read from the record's questions. */
export function recordPrompt(record: SampleRecord): AnswerablePrompt {
  const truth = GroundTruthSchema.parse(JSON.parse(record.groundTruth));
  const lines = record.code.split('\n');
  const baseline: BaselineQuestion[] = record.questions.map((q) => {
    const line = typeof q.line === 'number' ? q.line : undefined;
    switch (q.kind) {
      case 'next_line':
        return {
          kind: 'next_line',
          following: line !== undefined && line < lines.length ? { line: line + 1, text: (lines[line] ?? '').trim() } : { line: -1, text: '' },
        };
      case 'state':
      case 'state_any':
        // The record keeps no locals: the baseline's "unchanged value" is unknown here, so it says Nil.
        return { kind: q.kind, var: typeof q.var === 'string' ? q.var : '', before: null };
      case 'input':
        return { kind: 'input' };
      case 'coverage':
        return { kind: 'coverage' };
      default:
        return { kind: 'output' };
    }
  });
  return {
    template: 'dataset-record@1',
    format: truth.format,
    prompt: chatPrompt(record.prompt),
    ...(truth.format === 'reval' || truth.format.startsWith('cruxeval') ? { stop: ['[/ANSWER]'] } : {}),
    structured: truth.format === 'next_step_json',
    questions: [],
    baseline,
  };
}

export interface RecordResult {
  record: SampleRecord;
  samples: { text: string; reward: Reward }[];
  /** Why the provider gave no answer, when it did not. */
  error?: string;
}

export interface DatasetRun {
  label: string;
  results: RecordResult[];
}

/** Ask and reward every record (k samples each); a record the provider fails keeps no samples. */
export async function runDataset(
  provider: Provider,
  judge: JudgeClient,
  records: readonly SampleRecord[],
  options: { label: string; samples?: number; signal?: AbortSignal; onAnswered?: () => void; lanes?: number },
): Promise<DatasetRun> {
  const results: RecordResult[] = new Array(records.length);
  let next = 0;
  const lane = async () => {
    while (next < records.length) {
      const i = next++;
      const record = records[i]!;
      try {
        const answered = await answerPrompt(provider, recordPrompt(record), {
          ...(options.samples ? { samples: options.samples } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        const texts = answered.samples.map((s) => s.text);
        const rewards = await judge.rewardBatch(
          texts.map((response) => ({ groundTruth: record.groundTruth, response })),
          undefined,
          options.signal,
        );
        results[i] = { record, samples: texts.map((text, j) => ({ text, reward: rewards[j]! })) };
      } catch (err) {
        if (options.signal?.aborted) throw err;
        results[i] = { record, samples: [], error: err instanceof Error ? err.message : String(err) };
      }
      options.onAnswered?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.lanes ?? 16, records.length) }, lane));
  return { label: options.label, results };
}

/** A sample is fully right when every question of it is. */
const fullyRight = (r: Reward) => r.breakdown.length > 0 && r.breakdown.every((b) => b.verdict.correct);

export interface DatasetSummary {
  label: string;
  records: number;
  samples: number;
  /** kind → [right, total] over every question of every sample. */
  kinds: Map<string, [number, number]>;
  meanReward: number;
  /** Unbiased pass@1 and pass@k (k = samples per record) of fully right responses, in [0, 1]. */
  pass1: number;
  passK: number;
  k: number;
}

export function summarize(run: DatasetRun): DatasetSummary {
  const kinds = new Map<string, [number, number]>();
  let rewardSum = 0;
  let samples = 0;
  let p1 = 0;
  let pk = 0;
  const k = Math.max(1, ...run.results.map((r) => r.samples.length));
  for (const r of run.results) {
    for (const s of r.samples) {
      samples++;
      rewardSum += s.reward.reward;
      for (const b of s.reward.breakdown) {
        const t = kinds.get(b.kind) ?? [0, 0];
        t[0] += b.verdict.correct ? 1 : 0;
        t[1] += 1;
        kinds.set(b.kind, t);
      }
    }
    const c = r.samples.filter((s) => fullyRight(s.reward)).length;
    p1 += r.samples.length ? passAtK(r.samples.length, c, 1) : 0;
    pk += r.samples.length ? passAtK(r.samples.length, c, k) : 0;
  }
  const n = run.results.length;
  return { label: run.label, records: n, samples, kinds, meanReward: samples ? rewardSum / samples : 0, pass1: n ? p1 / n : 0, passK: n ? pk / n : 0, k };
}

function questionRows(run: DatasetRun, keyOf: (r: SampleRecord) => string): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const r of run.results)
    for (const s of r.samples)
      for (const b of s.reward.breakdown) {
        const key = keyOf(r.record);
        const t = out.get(key) ?? [0, 0];
        t[0] += b.verdict.correct ? 1 : 0;
        t[1] += 1;
        out.set(key, t);
      }
  return out;
}

const decile = (r: SampleRecord) => {
  const d = Math.min(9, Math.floor(r.difficulty.score * 10));
  return `${(d / 10).toFixed(1)}–${((d + 1) / 10).toFixed(1)}`;
};

/** The report: each group shows the model's bar beside the baseline's (`· baseline`). */
export function datasetReport(runs: readonly DatasetRun[], options: { title: string; subtitle?: string; created: string; worst?: number }): ReportInput {
  const sums = runs.map(summarize);
  const side = (name: string, about: string, keyOf: (r: SampleRecord) => string, order?: (a: string, b: string) => number): ReportGroup => {
    const per = runs.map((run) => questionRows(run, keyOf));
    const keys = [...new Set(per.flatMap((m) => [...m.keys()]))].sort(order);
    return {
      name,
      about,
      rows: keys.flatMap((k) =>
        runs.map((run, i) => ({ label: i === 0 ? k : `${k} · ${run.label}`, n: per[i]!.get(k)?.[1] ?? 0, correct: per[i]!.get(k)?.[0] ?? 0 })),
      ),
    };
  };
  const kindRows = [...new Set(sums.flatMap((s) => [...s.kinds.keys()]))]
    .sort()
    .flatMap((kind) =>
      sums.map((s, i) => ({ label: i === 0 ? kind : `${kind} · ${s.label}`, n: s.kinds.get(kind)?.[1] ?? 0, correct: s.kinds.get(kind)?.[0] ?? 0 })),
    );
  // Rewards in [0, 2], in eighths of the range: how many samples got each.
  const bins = Array.from({ length: 8 }, (_v, i) => i * 0.25);
  const rewardRows = bins.flatMap((lo, b) =>
    runs.map((run, i) => {
      const all = run.results.flatMap((r) => r.samples.map((s) => s.reward.reward));
      const inBin = all.filter((x) => (b === bins.length - 1 ? x >= lo : x >= lo && x < lo + 0.25)).length;
      return {
        label: `${lo.toFixed(2)}${b === bins.length - 1 ? '–2.00' : `–${(lo + 0.25).toFixed(2)}`}${i === 0 ? '' : ` · ${run.label}`}`,
        n: all.length,
        correct: inBin,
      };
    }),
  );
  const model = runs[0]!;
  const byFunction = questionRows(model, (r) => `${r.provenance.project}/${r.provenance.file}:${r.provenance.function}`);
  const worstFunctions = [...byFunction.entries()].sort((a, b) => a[1][0] / a[1][1] - b[1][0] / b[1][1] || b[1][1] - a[1][1]).slice(0, 15);
  const examples: ReportExample[] = model.results
    .flatMap((r) => r.samples.slice(0, 1).map((s) => ({ r, s })))
    .filter(({ s }) => !fullyRight(s.reward))
    .sort((a, b) => a.s.reward.reward - b.s.reward.reward)
    .slice(0, options.worst ?? 20)
    .map(({ r, s }) => ({
      id: r.record.id.slice(0, 12),
      group: `${r.record.provenance.project}/${r.record.provenance.function}`,
      question: `${r.record.entry}`,
      answer: s.text,
      expected: r.record.reference ?? '',
      reason: `reward ${s.reward.reward.toFixed(2)}: ${s.reward.breakdown
        .filter((b) => !b.verdict.correct)
        .map((b) => `${b.kind} ${b.verdict.reason}`)
        .join(', ')}`,
    }));
  const metrics = sums.flatMap((s, i) => {
    const tag = i === 0 ? '' : ` · ${s.label}`;
    return [
      { name: `pass@1${tag}`, value: s.pass1, n: s.records },
      ...(s.k > 1 ? [{ name: `pass@${s.k}${tag}`, value: s.passK, n: s.records }] : []),
      { name: `mean reward${tag}`, value: s.meanReward, unit: 'number' as const, n: s.samples },
    ];
  });
  return {
    schema: 'execverify.report/1',
    title: options.title,
    ...(options.subtitle ? { subtitle: options.subtitle } : {}),
    created: options.created,
    metrics: [...metrics, { name: 'records', value: sums[0]?.records ?? 0, unit: 'count' }],
    groups: [
      { name: 'Accuracy per question kind', about: 'Every question of every sample.', rows: kindRows },
      side('Accuracy by difficulty decile', "The record's structural difficulty score (docs/harvest.md), in tenths.", decile),
      side('Accuracy per project', 'Every question of every sample.', (r) => r.provenance.project),
      {
        name: 'Functions with the lowest accuracy',
        about: `The model; at most 15.`,
        rows: worstFunctions.map(([label, [c, n]]) => ({ label, n, correct: c })),
      },
      { name: 'Reward distribution', about: 'Share of samples whose reward R (0–2) falls in each bin.', rows: rewardRows },
    ],
    examples,
    notes: [
      'The baseline answers without a model: the line below for the next line, Nil for a value (the record keeps no locals to repeat), None for an output, YES for coverage.',
      'Rewards are the judge’s R = 2·((1−α)·R_IO + α·R_white) from each record’s ground truth, as trainers get them (docs/rewards-for-trainers.md).',
    ],
  };
}
