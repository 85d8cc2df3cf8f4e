// The harvest report: counts per stage, reasons for every drop, the difficulty
// histogram, reward statistics when a model answered, and time per stage. It is
// computed from what is on disk (store + drop log), so a resumed harvest
// reports the whole dataset, not just its last run.
import * as path from 'node:path';
import { readJsonl, readStore } from '../dataset/store';
import { writeFileAtomic } from '../dataset/parquet';
import { histogram } from './difficulty';
import type { ProjectInfo } from './project';
import type { CaptureSummary } from './python-harvest';
import { z } from 'zod';

/** One line of the drop log (`drops.jsonl`): a candidate and the stage and reason that dropped it. */
export const DropEntrySchema = z.object({
  candidate: z.string(),
  stage: z.string(),
  reason: z.string(),
  file: z.string(),
  function: z.string(),
  /** Redactions applied before the drop (still counted). */
  redactions: z.number().int().nonnegative().default(0),
});
export type DropEntry = z.infer<typeof DropEntrySchema>;

export interface StageTiming {
  stage: string;
  seconds: number;
  items: number;
}

export interface HarvestReport {
  project: Omit<ProjectInfo, 'root'> & { root: string };
  shard: string | null;
  tests: {
    runner: string | null;
    run: number | null;
    failures: number | null;
    /** Test modules that could not be collected (import errors), and the first lines of each error. */
    collectionErrors: number | null;
    errors: { where: string; lines: string[] }[];
  };
  /** Items entering each stage, in pipeline order. */
  funnel: { stage: string; count: number }[];
  /** Drop reasons per stage. */
  drops: Record<string, Record<string, number>>;
  credentials: { dropped: number; redacted: number };
  samples: number;
  splits: Record<string, number>;
  functions: number;
  /**
   * Module-level functions and methods (`Class.method`): defined in the project
   * modules the tests loaded, called by the tests, and with a stored sample.
   * Null when the capture did not count them (an older capture).
   */
  functionsAndMethods: null | Record<'defined' | 'called' | 'stored', { functions: number; methods: number }>;
  difficulty: { histogram: number[]; mean: number | null };
  rewards: null | { model: string; answers: number; mean: number; passRateMean: number; fullyRight: number };
  timings: StageTiming[];
  totalSeconds: number;
  samplesPerSecond: number;
  stoppedEarly: boolean;
}

export interface ReportInput {
  project: ProjectInfo;
  out: string;
  capture: CaptureSummary | null;
  buildDrops: { reason: string }[];
  builtSamples: number;
  shardSkipped: number;
  shard: string | null;
  timings: StageTiming[];
  totalSeconds: number;
  stoppedEarly: boolean;
  scorer: string | null;
}

const count = <T>(items: T[], key: (t: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
};

export function buildReport(input: ReportInput): HarvestReport {
  const records = readStore(input.out).items;
  const drops = readJsonl(path.join(input.out, 'drops.jsonl'), (v) => DropEntrySchema.parse(v)).items;
  const captureDrops = input.capture?.drops ?? {};
  const dropsByStage: Record<string, Record<string, number>> = { capture: captureDrops, build: count(input.buildDrops, (d) => d.reason) };
  for (const stage of new Set(drops.map((d) => d.stage))) {
    dropsByStage[stage] = count(
      drops.filter((d) => d.stage === stage),
      (d) => d.reason,
    );
  }
  const stageDrops = (stage: string) => Object.values(dropsByStage[stage] ?? {}).reduce((a, b) => a + b, 0);

  const captured = input.capture?.calls ?? 0;
  const considered = input.builtSamples - input.shardSkipped;
  const afterScan = considered - stageDrops('scan');
  const funnel = [
    { stage: 'captured calls', count: captured },
    { stage: 'standalone samples', count: input.builtSamples },
    { stage: 'in this shard', count: considered },
    { stage: 'free of credentials', count: afterScan },
    { stage: 'unique', count: afterScan - stageDrops('dedup') },
    { stage: 'reproduced under the tracer', count: afterScan - stageDrops('dedup') - stageDrops('trace') },
    { stage: 'with questions', count: afterScan - stageDrops('dedup') - stageDrops('trace') - stageDrops('questions') },
    { stage: 'stored', count: records.length },
  ];
  const scores = records.map((r) => r.difficulty.score);
  const answered = records.filter((r) => r.answers.length > 0);
  const allAnswers = answered.flatMap((r) => r.answers);
  const redacted = records.reduce((n, r) => n + r.redactions, 0) + drops.reduce((n, d) => n + d.redactions, 0);
  return {
    project: { ...input.project },
    shard: input.shard,
    tests: {
      runner: input.capture?.runner ?? null,
      run: input.capture?.testsRun ?? null,
      failures: input.capture?.testFailures ?? null,
      collectionErrors: input.capture?.collectionErrors ?? null,
      errors: input.capture?.errors ?? [],
    },
    funnel,
    drops: dropsByStage,
    credentials: { dropped: drops.filter((d) => d.reason.startsWith('credential')).length, redacted },
    samples: records.length,
    splits: count(records, (r) => r.split),
    functions: new Set(records.map((r) => `${r.provenance.file}:${r.provenance.function}`)).size,
    functionsAndMethods: input.capture?.functions ? { ...input.capture.functions, stored: storedFrom(records) } : null,
    difficulty: { histogram: histogram(scores), mean: scores.length ? round(scores.reduce((a, b) => a + b, 0) / scores.length) : null },
    rewards: allAnswers.length
      ? {
          model: input.scorer ?? allAnswers[0]!.model,
          answers: allAnswers.length,
          mean: round(allAnswers.reduce((a, b) => a + b.reward, 0) / allAnswers.length),
          passRateMean: round(answered.reduce((a, r) => a + (r.difficulty.passRate ?? 0), 0) / answered.length),
          fullyRight: allAnswers.filter((a) => (a.rIo === null || a.rIo === 1) && (a.rWhite === null || a.rWhite === 1)).length,
        }
      : null,
    timings: input.timings.map((t) => ({ ...t, seconds: round(t.seconds) })),
    totalSeconds: round(input.totalSeconds),
    samplesPerSecond: input.totalSeconds > 0 ? round(records.length / input.totalSeconds) : 0,
    stoppedEarly: input.stoppedEarly,
  };
}

/** Distinct functions and methods (a `Class.method` name) with a stored sample. */
function storedFrom(records: { provenance: { file: string; function: string } }[]): { functions: number; methods: number } {
  const names = new Set(records.map((r) => `${r.provenance.file}:${r.provenance.function}`));
  const methods = [...names].filter((n) => n.slice(n.lastIndexOf(':') + 1).includes('.')).length;
  return { functions: names.size - methods, methods };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

export function renderReport(report: HarvestReport): string {
  const lines: string[] = [];
  const p = report.project;
  lines.push(`# Harvest report: ${p.name}`, '');
  lines.push(`- repository: ${p.repository ?? '(none)'}${p.commit ? ` @ ${p.commit.slice(0, 12)}` : ''}`);
  lines.push(`- license: ${p.license ?? '(not found)'}`);
  lines.push(`- modules: ${p.modules}, test files: ${p.testFiles}`);
  lines.push(`- tests: ${report.tests.run ?? '?'} run with ${report.tests.runner ?? '?'}, ${report.tests.failures ?? '?'} failing`);
  if (report.tests.collectionErrors) lines.push(`- test modules not collected: ${report.tests.collectionErrors} (their tests did not run)`);
  for (const e of report.tests.errors) {
    lines.push(`  - \`${e.where}\`: ${e.lines.length ? e.lines.map((l) => l.trim()).join(' / ') : '(no message)'}`);
  }
  if (report.shard) lines.push(`- shard: ${report.shard}`);
  lines.push(
    `- samples: **${report.samples}** from ${report.functions} functions (${Object.entries(report.splits)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
  );
  const fm = report.functionsAndMethods;
  if (fm) {
    const pair = (x: { functions: number; methods: number }) => `${x.functions} + ${x.methods}`;
    lines.push(`- functions + methods: ${pair(fm.defined)} defined, ${pair(fm.called)} called by the tests, ${pair(fm.stored)} stored`);
  }
  lines.push(`- credentials: ${report.credentials.dropped} samples dropped, ${report.credentials.redacted} values redacted`);
  if (report.stoppedEarly) lines.push('- stopped early by --limit or --max-time; run the same command again to continue');
  lines.push('', '## Stages', '', '| stage | count |', '|---|---:|');
  for (const f of report.funnel) lines.push(`| ${f.stage} | ${f.count} |`);
  lines.push('', '## Drops', '', '| stage | reason | count |', '|---|---|---:|');
  for (const [stage, reasons] of Object.entries(report.drops)) {
    for (const [reason, n] of Object.entries(reasons).sort((a, b) => b[1] - a[1])) lines.push(`| ${stage} | ${reason} | ${n} |`);
  }
  lines.push('', '## Difficulty (structural score)', '');
  const max = Math.max(1, ...report.difficulty.histogram);
  report.difficulty.histogram.forEach((n, i) => {
    lines.push(`    ${(i / 10).toFixed(1)}-${((i + 1) / 10).toFixed(1)} ${'#'.repeat(Math.round((n / max) * 40)).padEnd(40)} ${n}`);
  });
  lines.push('', `mean: ${report.difficulty.mean ?? '-'}`);
  if (report.rewards) {
    const r = report.rewards;
    lines.push(
      '',
      '## Rewards',
      '',
      `- answered by: ${r.model}`,
      `- answers: ${r.answers}, mean reward ${r.mean}, fully right ${r.fullyRight}`,
      `- mean pass rate per sample: ${r.passRateMean}`,
    );
  }
  lines.push('', '## Time', '', '| stage | seconds |', '|---|---:|');
  for (const t of report.timings) lines.push(`| ${t.stage} | ${t.seconds} |`);
  lines.push(`| total | ${report.totalSeconds} |`, '', `${report.samplesPerSecond} samples/s`);
  return lines.join('\n') + '\n';
}

/** Writes report.json and report.md next to the store. */
export function writeReport(out: string, report: HarvestReport): { json: string; markdown: string } {
  const json = path.join(out, 'report.json');
  const markdown = path.join(out, 'report.md');
  writeFileAtomic(json, JSON.stringify(report, null, 2) + '\n');
  writeFileAtomic(markdown, renderReport(report));
  return { json, markdown };
}
