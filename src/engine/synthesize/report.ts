// The synthesis report (DIR/report.json + DIR/report.md): built from the files
// (store, drops.jsonl, work/answers.jsonl), so a resumed run reports the whole
// dataset, plus this run's counters (mutation, requests, stage times).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readJsonl, readStore } from '../dataset/store';
import { histogram } from '../harvest/difficulty';
import type { RunStats } from '../model/accounting';
import { readAnswers, SynthDropSchema, workFiles, type RunCounters } from './pipeline';

/** Stages an answer goes through (answer.ts, synthesis.py), then each of its calls (pipeline.ts), in order. */
const ANSWER_STAGES = ['parse', 'analyse'] as const;
const CALL_STAGES = ['calls', 'dedup', 'determinism', 'trace', 'confirm', 'questions', 'difficulty', 'store'] as const;

export interface SynthesisReport {
  schema: 'execverify.synthesis-report/1';
  constraints: string;
  specs: number;
  /** Specs with an answer (online or imported), and the answers' programs. */
  answered: number;
  answers: number;
  /** Samples in the store that synthesis made (synthesized + mutated). */
  kept: number;
  keptBySource: Record<string, number>;
  /** Drops by stage, then reason. */
  drops: Record<string, Record<string, number>>;
  /** The model's answers, then their calls (mutated inputs apart), through each stage in order. */
  stages: { stage: string; in: number; dropped: number; out: number }[];
  /** Kept samples per curriculum level. */
  levels: Record<string, number>;
  /** Structural difficulty per tenth (0.0–0.1 … 0.9–1.0). */
  difficultyHistogram: number[];
  /** Pass rate per tenth, over samples that were scored. */
  passRateHistogram: number[];
  scored: number;
  mutation: { tried: number; kept: number; coverageFromCalls: number; coverageWithMutations: number };
  model: {
    synthesis: { requests: number; failures: number; promptTokens: number; completionTokens: number; seconds: number };
    difficulty: (RunStats & { label: string }) | null;
  };
  stageSeconds: Record<string, number>;
  totalSeconds: number;
  stoppedEarly: boolean;
}

export function buildSynthesisReport(input: {
  out: string;
  constraints: string;
  specs: number;
  counters: RunCounters;
  scorer?: { label: string; stats: RunStats } | null;
  totalSeconds: number;
  stoppedEarly: boolean;
}): SynthesisReport {
  const work = workFiles(input.out);
  const answers = [...readAnswers(work.answers).values()];
  const records = readStore(input.out).items.filter((r) => r.provenance.synthesis);
  const drops: Record<string, Record<string, number>> = {};
  const modelDrops: Record<string, number> = {};
  for (const d of readJsonl(work.drops, (v) => SynthDropSchema.parse(v)).items) {
    const stage = (drops[d.stage] ??= {});
    stage[d.reason] = (stage[d.reason] ?? 0) + 1;
    if (d.source !== 'mutated') modelDrops[d.stage] = (modelDrops[d.stage] ?? 0) + 1;
  }
  const levels: Record<string, number> = {};
  const keptBySource: Record<string, number> = {};
  for (const r of records) {
    const s = r.provenance.synthesis!;
    const level = s.level === null ? 'none' : String(s.level);
    levels[level] = (levels[level] ?? 0) + 1;
    keptBySource[s.source] = (keptBySource[s.source] ?? 0) + 1;
  }
  const scored = records.filter((r) => r.difficulty.passRate !== null);
  const sum = (f: (a: (typeof answers)[number]) => number) => answers.reduce((n, a) => n + f(a), 0);
  const c = input.counters;
  const funnel = (start: number, order: readonly string[]) => {
    let n = start;
    return order.map((stage) => {
      const dropped = modelDrops[stage] ?? 0;
      const row = { stage, in: n, dropped, out: n - dropped };
      n -= dropped;
      return row;
    });
  };
  const keptFromModel = records.filter((r) => r.provenance.synthesis!.source === 'synthesized').length;
  const calls = keptFromModel + CALL_STAGES.reduce((n, stage) => n + (modelDrops[stage] ?? 0), 0);
  return {
    schema: 'execverify.synthesis-report/1',
    constraints: input.constraints,
    specs: input.specs,
    answered: answers.filter((a) => !a.error).length,
    answers: sum((a) => a.texts.length),
    kept: records.length,
    keptBySource,
    drops,
    stages: [
      ...funnel(
        sum((a) => a.texts.length),
        ANSWER_STAGES,
      ),
      ...funnel(calls, CALL_STAGES),
    ],
    levels,
    difficultyHistogram: histogram(records.map((r) => r.difficulty.score)),
    passRateHistogram: histogram(scored.map((r) => r.difficulty.passRate!)),
    scored: scored.length,
    mutation: { tried: c.mutationTried, kept: c.mutationKept, coverageFromCalls: c.coverageBefore, coverageWithMutations: c.coverageAfter },
    model: {
      synthesis: {
        requests: answers.filter((a) => a.via === 'online').length + c.requestFailures,
        failures: c.requestFailures + answers.filter((a) => a.error).length,
        promptTokens: sum((a) => a.usage?.promptTokens ?? 0),
        completionTokens: sum((a) => a.usage?.completionTokens ?? 0),
        seconds: Math.round(sum((a) => a.seconds ?? 0) * 1000) / 1000,
      },
      difficulty: input.scorer ? { label: input.scorer.label, ...input.scorer.stats } : null,
    },
    stageSeconds: Object.fromEntries(Object.entries(c.stageSeconds).map(([k, v]) => [k, Math.round(v * 1000) / 1000])),
    totalSeconds: Math.round(input.totalSeconds * 1000) / 1000,
    stoppedEarly: input.stoppedEarly,
  };
}

function bars(h: number[]): string {
  return h.map((n, i) => `| ${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)} | ${n} |`).join('\n');
}

export function renderSynthesisReport(r: SynthesisReport): string {
  const dropLines = Object.entries(r.drops).flatMap(([stage, reasons]) =>
    Object.entries(reasons)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `| ${stage} | ${reason} | ${n} |`),
  );
  const m = r.model.synthesis;
  return [
    '# Synthesis report',
    '',
    `constraints ${r.constraints}; ${r.specs} specs, ${r.answered} answered (${r.answers} answers); **${r.kept} samples kept** (${
      Object.entries(r.keptBySource)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    })${r.stoppedEarly ? '; stopped early (--limit / --max-time): run again to continue' : ''}`,
    '',
    '## Stages',
    '',
    'answers, then the calls of the programs that passed (round 1 and 2; mutated inputs apart):',
    '',
    '| stage | in | dropped | out |',
    '|---|---|---|---|',
    ...r.stages.map((s) => `| ${s.stage} | ${s.in} | ${s.dropped} | ${s.out} |`),
    '',
    '## Drops',
    '',
    '| stage | reason | count |',
    '|---|---|---|',
    ...(dropLines.length ? dropLines : ['| – | – | 0 |']),
    '',
    '## Levels (kept)',
    '',
    '| level | samples |',
    '|---|---|',
    ...Object.entries(r.levels).map(([l, n]) => `| ${l} | ${n} |`),
    '',
    '## Structural difficulty (kept)',
    '',
    '| score | samples |',
    '|---|---|',
    bars(r.difficultyHistogram),
    '',
    `## Pass rate (${r.scored} scored${r.model.difficulty ? ` by ${r.model.difficulty.label}` : ''})`,
    '',
    '| pass rate | samples |',
    '|---|---|',
    bars(r.passRateHistogram),
    '',
    '## Mutation (this run)',
    '',
    `${r.mutation.tried} mutated inputs tried, ${r.mutation.kept} kept; lines + branch edges covered: ${r.mutation.coverageFromCalls} by the model's calls, ${r.mutation.coverageWithMutations} with the kept mutations`,
    '',
    '## Model usage',
    '',
    `synthesis: ${m.requests} requests (${m.failures} failed), ${m.promptTokens} prompt + ${m.completionTokens} completion tokens, ${m.seconds} s`,
    r.model.difficulty
      ? `difficulty: ${r.model.difficulty.requests} requests, ${r.model.difficulty.promptTokens} prompt + ${r.model.difficulty.completionTokens} completion tokens`
      : 'difficulty: not scored (no --k / model)',
    '',
    '## Time (this run)',
    '',
    `${r.totalSeconds} s in all; ${Object.entries(r.stageSeconds)
      .map(([k, v]) => `${k} ${v} s`)
      .join(', ')}`,
    '',
  ].join('\n');
}

/** Writes report.json and report.md atomically (temp + rename). */
export function writeSynthesisReport(out: string, report: SynthesisReport): { json: string; markdown: string } {
  const json = path.join(out, 'report.json');
  const markdown = path.join(out, 'report.md');
  for (const [file, text] of [
    [json, JSON.stringify(report, null, 2) + '\n'],
    [markdown, renderSynthesisReport(report)],
  ] as const) {
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, text);
    fs.renameSync(temp, file);
  }
  return { json, markdown };
}
