// DIR/progress.jsonl of `execverify simulate`: each finished problem is
// appended (and synced) as it finishes, after a header naming the run's
// settings, so a run killed at any point starts again where it stopped: the
// problems already done are read back, not asked or run again. A progress
// file of other settings (another problem file, k, turns, model) is not reused.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { ProblemReportSchema } from './report';
import type { Finished } from './simulate';

export const PROGRESS_VERSION = 'execverify.simulate-progress/1';

const SettingsSchema = z.object({
  problems_sha256: z.string(),
  k: z.number().nullable(),
  turns: z.number(),
  provider: z.string(),
  templates: z.array(z.string()),
});
export type RunSettings = z.infer<typeof SettingsSchema>;

const HeaderSchema = z.object({ schema: z.literal(PROGRESS_VERSION), settings: SettingsSchema });
const LineSchema = z.union([z.object({ problem: ProblemReportSchema }), z.object({ error: z.object({ problem: z.string(), message: z.string() }) })]);

export function settingsOf(problemsText: string, rest: Omit<RunSettings, 'problems_sha256'>): RunSettings {
  return { problems_sha256: createHash('sha256').update(problemsText).digest('hex'), ...rest };
}

/** The problems a previous run of the same settings finished, by id ({} when there is none). */
export function readProgress(file: string, settings: RunSettings): { done: Map<string, Finished>; stale: boolean } {
  const done = new Map<string, Finished>();
  if (!existsSync(file)) return { done, stale: false };
  const lines = readFileSync(file, 'utf8').split('\n');
  let header: unknown;
  try {
    header = JSON.parse(lines[0] ?? '');
  } catch {
    return { done, stale: true };
  }
  const h = HeaderSchema.safeParse(header);
  if (!h.success || JSON.stringify(h.data.settings) !== JSON.stringify(settings)) return { done, stale: true };
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      break; // the line a kill cut short: everything after it is redone
    }
    const parsed = LineSchema.safeParse(raw);
    if (!parsed.success) break;
    const f = parsed.data;
    done.set('problem' in f ? f.problem.id : f.error.problem, f);
  }
  return { done, stale: false };
}

/** Appends finished problems to the progress file, each synced before the next starts. */
export class ProgressLog {
  #fd: number;

  /**
   * Writes the file anew — the header and the problems `done` already — whole
   * or not at all (temp + rename), so a line a kill cut short is gone; then
   * appends.
   */
  constructor(file: string, settings: RunSettings, done: Iterable<Finished> = []) {
    const tmp = `${file}.${process.pid}.tmp`;
    const lines = [{ schema: PROGRESS_VERSION, settings }, ...done].map((v) => JSON.stringify(v) + '\n');
    writeFileSync(tmp, lines.join(''));
    renameSync(tmp, file);
    this.#fd = openSync(file, 'a');
  }

  add(finished: Finished): void {
    this.#write(finished);
  }

  close(): void {
    closeSync(this.#fd);
  }

  #write(value: unknown): void {
    writeSync(this.#fd, JSON.stringify(value) + '\n');
    fsyncSync(this.#fd);
  }
}
