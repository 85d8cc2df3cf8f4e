// The evaluation report: one JSON document behind report.md and report.html,
// the same for every evaluation (a benchmark, a dataset, self-simulation).
// A producer fills it; src/engine/report renders and writes it.
import { z } from 'zod';

export const REPORT_SCHEMA_VERSION = 'execverify.report/1';

/** One headline number (an accuracy in [0, 1], a score in percent, a count). */
export const ReportMetricSchema = z.object({
  name: z.string(),
  value: z.number().nullable(),
  /** How to show it: `ratio` as a percent (0.5 → 50.00%), `percent` and `number` as they are (2 decimals), `count` as an integer. */
  unit: z.enum(['ratio', 'percent', 'number', 'count']).default('ratio'),
  /** How many answers stand behind it. */
  n: z.number().int().nonnegative().optional(),
});

/** A bar chart of accuracy: one bar per row (a task, a kind, a difficulty bucket, a project). */
export const ReportGroupSchema = z.object({
  name: z.string(),
  about: z.string().optional(),
  rows: z.array(z.object({ label: z.string(), n: z.number().int().nonnegative(), correct: z.number().int().nonnegative() })),
});

/** Counts of (predicted, actual) pairs over the mistakes of one kind: next-line mistakes, predicted line against real line. */
export const ReportConfusionSchema = z.object({
  title: z.string(),
  predicted: z.string(),
  actual: z.string(),
  cells: z.array(z.object({ predicted: z.string(), actual: z.string(), count: z.number().int().positive() })),
});

/** A wrong answer worth looking at, with its trace beside the report when there is one. */
export const ReportExampleSchema = z.object({
  id: z.string(),
  group: z.string(),
  question: z.string().optional(),
  answer: z.string(),
  expected: z.string(),
  reason: z.string(),
  /** A trace file relative to the report (traces/…json): replay it with the replay debugger. */
  trace: z.string().optional(),
  line: z.number().int().optional(),
});

export const ReportSchema = z.object({
  schema: z.literal(REPORT_SCHEMA_VERSION),
  title: z.string(),
  subtitle: z.string().optional(),
  created: z.string(),
  metrics: z.array(ReportMetricSchema),
  groups: z.array(ReportGroupSchema),
  confusion: ReportConfusionSchema.optional(),
  examples: z.array(ReportExampleSchema),
  notes: z.array(z.string()).default([]),
});
export type Report = z.infer<typeof ReportSchema>;
export type ReportInput = z.input<typeof ReportSchema>;
export type ReportMetric = z.infer<typeof ReportMetricSchema>;
export type ReportGroup = z.infer<typeof ReportGroupSchema>;
export type ReportExample = z.infer<typeof ReportExampleSchema>;
