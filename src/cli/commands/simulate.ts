// `execverify simulate --problems FILE --out DIR`: the model predicts what each
// candidate program returns or prints on each public test; the real runs
// decide; DIR/report.json and DIR/report.md say how well choosing (and fixing)
// candidates by simulation does against random choice and real execution.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, type Command } from '../command';
import { modelProviderFor } from '../provider';
import { JudgeClient } from '../../engine/judge/client';
import { formatRunStats } from '../../engine/model/accounting';
import { BaselineProvider } from '../../engine/model/baseline';
import { ModelProvider, type Provider } from '../../engine/model/provider';
import { resolvePython } from '../../engine/python';
import { ProblemFileError, parseProblems } from '../../engine/simulate/problem';
import { chartLibraries, renderHtml, ReportSchema } from '../../engine/report';
import { evaluationReport, renderReportMarkdown, SimulateReportSchema } from '../../engine/simulate/report';
import { ProgressLog, readProgress, settingsOf } from '../../engine/simulate/progress';
import { simulate, templatesOf } from '../../engine/simulate/simulate';
import { modelSource } from '../../engine/synthesize/source';
import { TracerPool } from '../../engine/trace/runner';
import { CONNECT_HINT } from './ask';

function count(values: Record<string, unknown>, flag: string, min: number): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} needs an integer ≥ ${min}, got '${String(raw)}'`);
  return n;
}

/** Written whole or not at all: a temp file renamed over the target. */
function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

export const simulateCommand: Command = {
  name: 'simulate',
  summary:
    'Predict the runs of candidate programs on their public tests, choose (and fix) candidates by the predictions, and measure it against the real runs.',
  usage:
    'execverify simulate --problems FILE --out DIR [--k K] [--turns T] [--base-url URL --model NAME] [--timeout-ms MS] ' +
    '[--no-cache] [--cache-dir DIR] [--jobs N] [--python PATH] [--quiet]',
  options: {
    problems: { type: 'string' },
    out: { type: 'string' },
    k: { type: 'string' },
    turns: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    'timeout-ms': { type: 'string' },
    'no-cache': { type: 'boolean' },
    'cache-dir': { type: 'string' },
    jobs: { type: 'string' },
    python: { type: 'string' },
    quiet: { type: 'boolean' },
  },
  async run(values, positionals, io) {
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]} (the problems go in --problems FILE)`);
    if (typeof values.problems !== 'string') throw new UsageError('missing --problems FILE (JSONL, see docs/self-simulation.md#problems)');
    if (typeof values.out !== 'string') throw new UsageError('missing --out DIR (report.json and report.md go there)');
    const k = count(values, 'k', 1);
    const turns = count(values, 'turns', 0) ?? 0;
    const jobs = count(values, 'jobs', 1);
    const timeoutMs = count(values, 'timeout-ms', 1);

    const file = path.resolve(io.cwd, values.problems);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      io.stderr.write(
        `execverify simulate: cannot read ${values.problems}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}\n`,
      );
      return 1;
    }
    let problems;
    try {
      problems = parseProblems(text, values.problems);
    } catch (err) {
      if (err instanceof ProblemFileError) {
        io.stderr.write(`execverify simulate: ${err.message}\n`);
        return 1;
      }
      throw err;
    }

    let provider: Provider | undefined = modelProviderFor(io, values, {
      ...(typeof values['base-url'] === 'string' ? { baseURL: values['base-url'] } : {}),
      ...(typeof values.model === 'string' ? { model: values.model } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    if (!provider) {
      io.stderr.write(`${CONNECT_HINT}\n\n`);
      provider = new BaselineProvider();
      if (turns > 0) io.stderr.write('--turns: the baseline writes no programs, so nothing is fixed (connect a model to fix candidates).\n\n');
    }

    const out = path.resolve(io.cwd, values.out);
    mkdirSync(out, { recursive: true });
    // A killed run resumes: the problems its progress file holds are not asked or run again.
    const fixer = provider instanceof ModelProvider ? modelSource(provider.client) : undefined;
    const settings = settingsOf(text, { k: k ?? null, turns: fixer ? turns : 0, provider: provider.info.label, templates: templatesOf(fixer ? turns : 0) });
    const progressFile = path.join(out, 'progress.jsonl');
    const { done: resumed, stale } = readProgress(progressFile, settings);
    if (stale) io.stderr.write(`simulate: ${path.join(values.out, 'progress.jsonl')} is from a run with other settings: starting over\n`);
    else if (resumed.size) io.stderr.write(`simulate: resuming, ${resumed.size} of ${problems.length} problems already done\n`);
    const log = new ProgressLog(progressFile, settings, resumed.values());
    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    const pool = new TracerPool({ python, env: io.env, ...(jobs ? { size: jobs } : {}) });
    try {
      const report = await simulate(
        {
          provider,
          judge: new JudgeClient(pool),
          pool,
          signal: io.signal,
          // Fixed programs are written by the model; the baseline writes none.
          ...(fixer ? { fixer } : {}),
          onFinished: (finished) => log.add(finished),
          onProblem: values.quiet ? undefined : (done, total, id) => io.stderr.write(`simulate: ${done}/${total} ${id}\n`),
        },
        problems,
        { ...(k !== undefined ? { k } : {}), turns, problemsFile: values.problems, resumed },
      );
      SimulateReportSchema.parse(report); // what is written is what readers validate
      writeAtomic(path.join(out, 'report.json'), JSON.stringify(report, null, 2) + '\n');
      writeAtomic(path.join(out, 'report.md'), renderReportMarkdown(report));
      // The charts: the evaluation report module's self-contained page (no network).
      writeAtomic(path.join(out, 'report.html'), renderHtml(ReportSchema.parse(evaluationReport(report, new Date().toISOString())), await chartLibraries()));
      const s = report.summary;
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
      io.stdout.write(
        `provider: ${provider.info.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : `model ${provider.info.label}`}\n` +
          `${s.problems} problems, ${s.candidates} candidates, ${s.predictions} predictions` +
          `${s.model_errors ? ` (${s.model_errors} requests failed)` : ''}${report.errors.length ? `; ${report.errors.length} problems not simulated` : ''}\n` +
          `pass@1  random ${pct(s.pass_at_1.random)}  simulated ${pct(s.pass_at_1.simulated)}  oracle ${pct(s.pass_at_1.oracle)}  gap ${(100 * s.gap).toFixed(1)} points\n` +
          `wrote ${path.join(values.out, 'report.json')}, report.md and report.html\n`,
      );
      if (s.fixing) {
        const last = (kind: 'simulated' | 'real') => s.fixing![kind].at(-1)!;
        const line = (kind: 'simulated' | 'real') => `${kind} feedback fixed ${last(kind).fixed}, broke ${last(kind).broken}, left ${last(kind).unchanged}`;
        io.stdout.write(`fixing after ${report.turns} turns: ${line('simulated')}; ${line('real')}\n`);
      }
      if (provider.info.kind === 'model') io.stdout.write(`model usage: ${formatRunStats(provider.stats())}\n`);
      if (s.predictions > 0 && s.model_errors === s.predictions) {
        const first = report.problems.flatMap((p) => p.candidates.flatMap((c) => c.predictions)).find((p) => p.error)?.error;
        io.stderr.write(`execverify simulate: every model request failed (${first}); the report holds the real runs only\n`);
        return 1;
      }
      return report.errors.length === problems.length ? 1 : 0;
    } catch (err) {
      if (io.signal.aborted) {
        io.stderr.write('execverify simulate: cancelled\n');
        return 130;
      }
      throw err;
    } finally {
      log.close();
      provider.close();
      await pool.close();
    }
  },
};
