// `execverify eval cruxeval`: score a CRUXEval generations file exactly as the
// official scorer does (same rules, same 3 s limit, our sandbox), print pass@1
// and pass@5, and write per-sample verdicts. `execverify eval reval`: REval's
// four tasks and consistency on its own data, by its rules or ours.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { setMaxListeners } from 'node:events';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { UsageError, type Command } from '../command';
import { modelProviderFor } from '../provider';
import { resolvePython } from '../../engine/python';
import { TracerPool } from '../../engine/trace/runner';
import { JudgeClient, passAtK, type CruxevalSample } from '../../engine/judge/client';
import { askReval, revalPrompt } from '../../engine/eval/reval-ask';
import { askCruxeval } from '../../engine/eval/cruxeval';
import { readJsonlRows } from '../../engine/eval/jsonl';
import { datasetReport, runDataset as runStore, summarize, type DatasetRun } from '../../engine/eval/dataset';
import { readStore } from '../../engine/dataset/store';
import { LcbRowSchema, lcbKey, lcbPass1, scoreLcb, type LcbRow } from '../../engine/eval/lcb';
import { BUILTIN_TEMPLATES } from '../../engine/model/templates';
import { revalReport } from '../../engine/eval/reval-report';
import { writeReport } from '../../engine/report';
import type { Trace } from '../../engine/trace/schema';
import { Progress } from '../../engine/eval/progress';
import { formatRunStats } from '../../engine/model/accounting';
import { BaselineProvider } from '../../engine/model/baseline';
import type { EndpointConfigInput } from '../../engine/model/config';
import type { Provider } from '../../engine/model/provider';
import {
  loadReval,
  probesOf,
  revalJob,
  revalMetrics,
  RevalDataError,
  scoreProbes,
  type RevalMetrics,
  type RevalProbe,
  type ScoredProbe,
} from '../../engine/eval/reval';

const RowSchema = z.object({ id: z.string(), code: z.string(), input: z.string(), output: z.string() });
const GenerationsSchema = z.record(z.array(z.string()));
const CHUNK = 25;

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} ${file} is not JSON: ${(err as Error).message}`);
  }
}

function readRows(file: string): Promise<z.infer<typeof RowSchema>[]> {
  return readJsonlRows(file, RowSchema, {
    name: `--data ${file}`,
    lineHint: 'expected CRUXEval JSONL: id, code, input, output',
    error: (m) => new UsageError(m),
  });
}

export const evalCommand: Command = {
  name: 'eval',
  summary: 'Score a benchmark: `eval cruxeval` (official CRUXEval rules, pass@1 / pass@5), `eval reval` (REval: coverage, state, path, output, consistency).',
  usage:
    'execverify eval cruxeval --data cruxeval.jsonl (--generations generations.json | --base-url URL --model NAME [--samples N] [--temperature T]) ' +
    '--mode output|input [--out scored.json] [--limit N] [--workers N] [--timeout-s 3] [--python PATH]\n' +
    '       execverify eval reval --data REVAL_CHECKOUT [--generations FILE | --base-url URL --model NAME | --baseline] ' +
    '[--mode reval|strict] [--cot] [--out verdicts.json] [--report DIR] [--write-reference FILE] [--limit N] [--temperature T] [--max-tokens N] ' +
    '[--no-cache] [--cache-dir DIR] [--workers N] [--timeout-s 3] [--python PATH]\n' +
    '       execverify eval lcb-exec --data execution.jsonl --generations FILE [--cot] [--out scored.json] [--report DIR] [--limit N] [--workers N]\n' +
    '       execverify eval dataset STORE [--base-url URL --model NAME] [--samples K] [--no-baseline] [--limit N] [--report DIR] [--out results.json]',
  options: {
    data: { type: 'string' },
    generations: { type: 'string' },
    mode: { type: 'string' },
    out: { type: 'string' },
    workers: { type: 'string' },
    'timeout-s': { type: 'string' },
    python: { type: 'string' },
    cot: { type: 'boolean' },
    limit: { type: 'string' },
    'write-reference': { type: 'string' },
    report: { type: 'string' },
    samples: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    api: { type: 'string' },
    temperature: { type: 'string' },
    'max-tokens': { type: 'string' },
    'no-cache': { type: 'boolean' },
    'cache-dir': { type: 'string' },
    baseline: { type: 'boolean' },
    'no-baseline': { type: 'boolean' },
  },
  async run(values, positionals, io) {
    if (positionals.length === 1 && positionals[0] === 'reval') return runReval(values, io);
    if (positionals.length === 1 && positionals[0] === 'lcb-exec') return runLcb(values, io);
    if (positionals.length === 2 && positionals[0] === 'dataset') return runDataset(values, positionals[1]!, io);
    if (positionals[0] !== 'cruxeval' || positionals.length !== 1)
      throw new UsageError(
        'the benchmarks are cruxeval, reval, lcb-exec and a store: execverify eval cruxeval|reval|lcb-exec ... or execverify eval dataset STORE',
      );
    const mode = values.mode;
    if (mode !== 'output' && mode !== 'input') throw new UsageError(`--mode must be output or input${mode === undefined ? '' : `, not '${String(mode)}'`}`);
    if (typeof values.data !== 'string') throw new UsageError('missing --data (the CRUXEval JSONL file)');
    const online = typeof values.generations !== 'string';
    const provider = online ? providerFor(values, io) : undefined;
    if (online && !provider)
      throw new UsageError('missing --generations (a JSON object {"sample_N": [answers...]}), or a model to ask: --base-url URL --model NAME (or --baseline)');
    const nSamples = positiveInt(values.samples, '--samples') ?? 1;
    const workers = values.workers === undefined ? Math.min(4, os.availableParallelism()) : Number(values.workers);
    if (!Number.isInteger(workers) || workers < 1) throw new UsageError(`--workers needs a positive integer, got '${String(values.workers)}'`);
    const timeoutS = values['timeout-s'] === undefined ? undefined : Number(values['timeout-s']);
    if (timeoutS !== undefined && !(timeoutS > 0)) throw new UsageError(`--timeout-s needs a positive number, got '${String(values['timeout-s'])}'`);

    let rows = await readRows(path.resolve(io.cwd, values.data));
    const limit = positiveInt(values.limit, '--limit');
    if (limit !== undefined) rows = rows.slice(0, limit);
    let generations: Record<string, string[]>;
    if (provider) {
      // The official direct prompt (the built-in template), n samples each, read by the official post-processing.
      const template = BUILTIN_TEMPLATES.find((t) => t.name === `cruxeval-${mode}`)!;
      io.stdout.write(`provider: ${provider.info.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : `model ${provider.info.label}`}\n`);
      const progress = new Progress({ label: `cruxeval ${mode}: asked`, total: rows.length, write: (l) => io.stderr.write(`${l}\n`) });
      const asked = await askCruxeval(provider, rows, mode, template, { samples: nSamples, signal: io.signal, onAnswered: () => progress.tick() });
      if (asked.failed.size) {
        const [id, why] = [...asked.failed][0]!;
        io.stderr.write(`warning: ${asked.failed.size} samples got no answer from the model (first: ${id}: ${why}); they count as wrong\n`);
      }
      io.stdout.write(`model calls: ${formatRunStats(provider.stats())}\n`);
      generations = asked.generations;
      const file = path.resolve(
        io.cwd,
        typeof values.out === 'string' ? values.out.replace(/(\.json)?$/, '.generations.json') : `cruxeval-${mode}.generations.json`,
      );
      await writeAtomic(file, JSON.stringify(generations) + '\n');
      io.stdout.write(`generations written to ${file} (the official format; score them again with --generations)\n`);
    } else {
      const genRaw = await readJson(path.resolve(io.cwd, values.generations as string), '--generations');
      const gens = GenerationsSchema.safeParse(genRaw);
      if (!gens.success) throw new UsageError('--generations must be a JSON object {"sample_N": ["answer", ...]} (lists of strings)');
      generations = gens.data;
    }
    const gens = { data: generations };
    const missing = rows.filter((r) => !(r.id in gens.data)).map((r) => r.id);
    if (missing.length)
      throw new UsageError(`--generations has no answers for ${missing.length} samples (first: ${missing[0]}); the official scorer needs every sample`);
    const known = new Set(rows.map((r) => r.id));
    const extra = limit === undefined ? Object.keys(gens.data).filter((k) => !known.has(k)) : [];
    if (extra.length) throw new UsageError(`--generations has ${extra.length} ids not in --data (first: ${extra[0]})`);

    const samples: CruxevalSample[] = rows.map((r) => ({ code: r.code, input: r.input, output: r.output, generations: gens.data[r.id]! }));
    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    const pool = new TracerPool({ python, size: workers, env: io.env });
    const judge = new JudgeClient(pool);
    const results: boolean[][] = new Array(samples.length);
    try {
      // One lane per worker, each taking the next chunk: every worker stays busy
      // and only `workers` requests (and abort listeners) are in flight.
      let next = 0;
      const lane = async () => {
        while (next < samples.length) {
          const start = next;
          next += CHUNK;
          const rows = await judge.cruxevalScore(samples.slice(start, start + CHUNK), mode, timeoutS !== undefined ? { timeoutS } : {}, io.signal);
          rows.forEach((r, j) => (results[start + j] = r.map((v) => v.correct)));
        }
      };
      await Promise.all(Array.from({ length: workers }, lane));
    } finally {
      await pool.close();
    }
    const p1 = results.map((r) => passAtK(r.length, r.filter(Boolean).length, 1));
    const p5 = results.map((r) => passAtK(r.length, r.filter(Boolean).length, 5));
    const mean = (xs: number[]) => (xs.length ? (100 * xs.reduce((a, b) => a + b, 0)) / xs.length : 0);
    io.stdout.write(`cruxeval ${mode}: ${rows.length} samples, ${results.reduce((a, r) => a + r.length, 0)} generations\n`);
    io.stdout.write(`pass@1: ${mean(p1).toFixed(1)}  pass@5: ${mean(p5).toFixed(1)}\n`);
    if (results.some((r) => r.length < 5)) io.stdout.write('note: pass@5 counts 0 for samples with fewer than 5 generations (unbiased estimator)\n');
    if (typeof values.out === 'string') {
      const out = path.resolve(io.cwd, values.out);
      await writeFile(out, JSON.stringify(Object.fromEntries(rows.map((r, i) => [r.id, results[i]!])), null, 0) + '\n');
      io.stdout.write(`verdicts written to ${out}\n`);
    }
    return 0;
  },
};

/** Written whole or not at all: a temp file beside the target, then a rename. */
async function writeAtomic(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

function positiveInt(v: unknown, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} needs a positive integer, got '${String(v)}'`);
  return n;
}

/**
 * The model to ask: --base-url/--model over EXECVERIFY_* variables
 * (docs/model-endpoints.md), with the response cache unless --no-cache (a
 * rerun resumes from it); --baseline for the trivial baseline; none → undefined.
 */
function providerFor(values: Record<string, unknown>, io: Parameters<Command['run']>[2]): Provider | undefined {
  if (values.baseline === true) return new BaselineProvider();
  const overrides: Partial<EndpointConfigInput> = {};
  if (typeof values['base-url'] === 'string') overrides.baseURL = values['base-url'];
  if (typeof values.model === 'string') overrides.model = values.model;
  if (values.api !== undefined) {
    if (values.api !== 'chat' && values.api !== 'completions') throw new UsageError(`--api must be chat or completions, not '${String(values.api)}'`);
    overrides.api = values.api;
  }
  if (values.temperature !== undefined) {
    const t = Number(values.temperature);
    if (!Number.isFinite(t) || t < 0) throw new UsageError(`--temperature needs a number >= 0, got '${String(values.temperature)}'`);
    overrides.temperature = t;
  }
  const maxTokens = positiveInt(values['max-tokens'], '--max-tokens');
  if (maxTokens !== undefined) overrides.maxTokens = maxTokens;
  return modelProviderFor(io, values, overrides);
}

const pct = (x: number | null) => (x === null ? 'n/a' : (100 * x).toFixed(2));

function printRevalMetrics(io: { stdout: NodeJS.WritableStream }, label: string, m: RevalMetrics): void {
  io.stdout.write(
    `${label}: coverage acc ${pct(m.coverage.acc)} P ${pct(m.coverage.prec)} R ${pct(m.coverage.rec)} F1 ${pct(m.coverage.f1)} (${m.coverage.n})` +
      ` | state ${pct(m.state.acc)} (${m.state.n}) | path ${pct(m.path.acc)} (${m.path.n}) | output ${pct(m.output.acc)} (${m.output.n})` +
      ` | consistency ${m.consistency.toFixed(2)}\n`,
  );
}

async function runReval(values: Record<string, unknown>, io: Parameters<Command['run']>[2]): Promise<number> {
  const mode = values.mode ?? 'reval';
  if (mode !== 'reval' && mode !== 'strict') throw new UsageError(`--mode must be reval (REval's rules) or strict (ours), not '${String(mode)}'`);
  if (typeof values.data !== 'string')
    throw new UsageError("missing --data (a checkout of REval's repository: data/DREval_data.jsonl, data/DREval_tasks.jsonl)");
  const reference = typeof values['write-reference'] === 'string' ? path.resolve(io.cwd, values['write-reference']) : undefined;
  const online = typeof values.generations !== 'string' && !reference;
  const provider = online ? providerFor(values, io) : undefined;
  if (online && !provider)
    throw new UsageError(
      'nothing to score: pass --generations FILE (a JSON object {"<task_id>/<input_idx>/<task>/<probe_idx>": "raw answer"}), ' +
        'a model (--base-url URL --model NAME, or EXECVERIFY_BASE_URL / EXECVERIFY_MODEL), --baseline, or --write-reference FILE',
    );
  const limit = positiveInt(values.limit, '--limit');
  const workers = positiveInt(values.workers, '--workers') ?? Math.min(4, os.availableParallelism());
  const timeoutS = values['timeout-s'] === undefined ? undefined : Number(values['timeout-s']);
  if (timeoutS !== undefined && !(timeoutS > 0)) throw new UsageError(`--timeout-s needs a positive number, got '${String(values['timeout-s'])}'`);

  let programs;
  try {
    programs = await loadReval(path.resolve(io.cwd, values.data));
  } catch (err) {
    if (err instanceof RevalDataError) throw new UsageError(err.message);
    throw err;
  }
  if (limit !== undefined) programs = programs.slice(0, limit);
  let answers: Map<string, string> | undefined;
  if (typeof values.generations === 'string') {
    const raw = await readJson(path.resolve(io.cwd, values.generations), '--generations');
    const gens = z.record(z.string()).safeParse(raw);
    if (!gens.success) throw new UsageError('--generations must be a JSON object {"<task_id>/<input_idx>/<task>/<probe_idx>": "raw answer text"}');
    answers = new Map(Object.entries(gens.data));
  }

  const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
  const pool = new TracerPool({ python, size: workers, env: io.env });
  const judge = new JudgeClient(pool);
  let scored: ScoredProbe[] = [];
  const traceOf = new Map<string, Trace>(); // <task_id>/<input_idx> → its trace, for the report's replay links
  let label = 'generations';
  try {
    const pairs = programs.flatMap((p) => p.tasks.map((pair) => ({ p, pair })));
    io.stderr.write(`reval: tracing ${pairs.length} inputs of ${programs.length} programs\n`);
    setMaxListeners(64, io.signal); // one abort listener per batch in flight
    const traces = await pool.traceMany(
      pairs.map(({ p, pair }) => revalJob(p, pair.input_idx)),
      io.signal,
    );
    const probes: RevalProbe[] = pairs.flatMap(({ p, pair }, i) => probesOf(p, pair, traces[i]!));
    pairs.forEach(({ p, pair }, i) => {
      const t = traces[i]!;
      if (!(t instanceof Error)) traceOf.set(`${p.data.task_id}/${pair.input_idx}`, t);
    });
    if (typeof values.generations === 'string') label = path.basename(values.generations);
    else if (reference) label = 'reference answers';
    if (reference) {
      await writeAtomic(reference, JSON.stringify(Object.fromEntries(probes.map((p) => [p.key, p.reference])), null, 1) + '\n');
      io.stdout.write(`reference answers for ${probes.length} probes written to ${reference}\n`);
      if (!answers) answers = new Map(probes.map((p) => [p.key, p.reference]));
    }
    if (provider) {
      const byKey = new Map(pairs.map(({ p, pair }) => [`${p.data.task_id}/${pair.input_idx}`, { p, pair }] as const));
      const asks = probes.map((probe) => {
        const { p, pair } = byKey.get(`${probe.taskId}/${probe.inputIdx}`)!;
        return { probe, prompt: revalPrompt(p, pair, probe, values.cot === true) };
      });
      label = provider.info.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : `model ${provider.info.label}`;
      io.stdout.write(`provider: ${label}\n`);
      const progress = new Progress({ label: 'reval: asked', total: asks.length, write: (l) => io.stderr.write(`${l}\n`) });
      const asked = await askReval(provider, asks, { signal: io.signal, onAnswered: () => progress.tick() });
      answers = asked.answers;
      if (asked.failed.size) {
        const [key, why] = [...asked.failed][0]!;
        io.stderr.write(`warning: ${asked.failed.size} prompts got no answer from the model (first: ${key}: ${why}); they count as empty answers\n`);
      }
      io.stdout.write(`model calls: ${formatRunStats(provider.stats())}\n`);
      if (typeof values.out === 'string') {
        const gens = path.resolve(io.cwd, values.out.replace(/(\.json)?$/, '.generations.json'));
        await writeAtomic(gens, JSON.stringify(Object.fromEntries(answers), null, 1) + '\n');
        io.stdout.write(`generations written to ${gens} (score them again with --generations)\n`);
      }
    }
    const given: ReadonlyMap<string, string> = answers ?? new Map();
    const known = new Set(probes.map((p) => p.key));
    const missing = probes.filter((p) => !given.has(p.key));
    if (missing.length) io.stderr.write(`warning: ${missing.length} probes have no answer (first: ${missing[0]!.key}); they count as empty answers\n`);
    const extra = limit === undefined ? [...given.keys()].filter((k) => !known.has(k)) : [];
    if (extra.length) throw new UsageError(`--generations has ${extra.length} keys that are no REval probe (first: ${extra[0]})`);
    scored = await scoreProbes(judge, probes, given, {
      mode,
      cot: values.cot === true,
      ...(timeoutS ? { timeoutS } : {}),
      signal: io.signal,
      onProgress: (
        (progress) => (n: number) =>
          progress.tick(n - progress.count)
      )(new Progress({ label: 'reval: scored', total: probes.length, write: (l) => io.stderr.write(`${l}\n`) })),
    });
  } finally {
    await pool.close();
  }
  const defined = scored.filter((s) => s.defined);
  io.stdout.write(
    `reval (${mode} rules${values.cot === true ? ', chain of thought' : ''}): ${programs.length} programs, ${scored.length} probes, ${defined.length} well defined\n`,
  );
  printRevalMetrics(io, 'all probes', revalMetrics(scored));
  if (defined.length !== scored.length) printRevalMetrics(io, 'well defined', revalMetrics(defined));
  if (typeof values.out === 'string') {
    const out = path.resolve(io.cwd, values.out);
    const body = Object.fromEntries(scored.map((s) => [s.key, { ...s.verdict, defined: s.defined, ...(s.why ? { why: s.why } : {}) }]));
    await writeAtomic(out, JSON.stringify(body, null, 0) + '\n');
    io.stdout.write(`verdicts written to ${out}\n`);
  }
  if (typeof values.report === 'string') {
    const dir = path.resolve(io.cwd, values.report);
    const { report, traces } = revalReport(scored, {
      title: `REval: ${label}`,
      subtitle: `${mode === 'reval' ? "REval's rules" : 'our rules (strict)'}${values.cot === true ? ', chain of thought' : ', direct prompts'} · ${programs.length} programs`,
      created: new Date().toISOString(),
      traces: traceOf,
    });
    const written = await writeReport(dir, report, { traces });
    io.stdout.write(`report written to ${written.html} (and report.md, report.json, ${traces.size} traces)\n`);
  }
  return 0;
}

/** LiveCodeBench execution rows: a JSON array, or JSON lines. */
async function readLcbRows(file: string): Promise<LcbRow[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --data ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let raw: unknown[];
  try {
    raw = text.trimStart().startsWith('[')
      ? (JSON.parse(text) as unknown[])
      : text
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l) as unknown);
  } catch (err) {
    throw new UsageError(`--data ${file} is neither a JSON array nor JSON lines: ${(err as Error).message}`);
  }
  return raw.map((r, i) => {
    const row = LcbRowSchema.safeParse(r);
    if (!row.success)
      throw new UsageError(
        `--data ${file} row ${i + 1}: ${row.error.issues[0]!.path.join('.')}: ${row.error.issues[0]!.message} (expected code, input, output)`,
      );
    return row.data;
  });
}

async function runLcb(values: Record<string, unknown>, io: Parameters<Command['run']>[2]): Promise<number> {
  if (typeof values.data !== 'string')
    throw new UsageError('missing --data (LiveCodeBench execution problems: JSON lines or an array of {id, code, input, output, difficulty})');
  if (typeof values.generations !== 'string') throw new UsageError('missing --generations (a JSON object {"<id>": ["model output", ...]})');
  const workers = positiveInt(values.workers, '--workers') ?? Math.min(4, os.availableParallelism());
  const limit = positiveInt(values.limit, '--limit');
  const timeoutS = values['timeout-s'] === undefined ? undefined : Number(values['timeout-s']);
  if (timeoutS !== undefined && !(timeoutS > 0)) throw new UsageError(`--timeout-s needs a positive number, got '${String(values['timeout-s'])}'`);
  let rows = await readLcbRows(path.resolve(io.cwd, values.data));
  if (limit !== undefined) rows = rows.slice(0, limit);
  const gens = GenerationsSchema.safeParse(await readJson(path.resolve(io.cwd, values.generations), '--generations'));
  if (!gens.success) throw new UsageError('--generations must be a JSON object {"<id>": ["model output", ...]} (lists of strings)');
  const missing = rows.map((r, i) => lcbKey(r, i)).filter((k) => !(k in gens.data));
  if (missing.length) throw new UsageError(`--generations has no outputs for ${missing.length} problems (first: ${missing[0]})`);
  const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
  const pool = new TracerPool({ python, size: workers, env: io.env });
  let scored;
  try {
    scored = await scoreLcb(new JudgeClient(pool), rows, gens.data, { cot: values.cot === true, ...(timeoutS ? { timeoutS } : {}), signal: io.signal });
  } finally {
    await pool.close();
  }
  io.stdout.write(
    `lcb-exec: ${scored.length} problems, ${scored.reduce((a, s) => a + s.answers.length, 0)} generations\npass@1: ${lcbPass1(scored).toFixed(2)}\n`,
  );
  const levels = [...new Set(scored.map((s) => s.row.difficulty ?? 'unknown'))];
  const byLevel = levels.map((d) => {
    const xs = scored.filter((s) => (s.row.difficulty ?? 'unknown') === d);
    return {
      label: d,
      n: xs.reduce((a, s) => a + s.results.length, 0),
      correct: xs.reduce((a, s) => a + s.results.filter(Boolean).length, 0),
      pass1: lcbPass1(xs),
    };
  });
  if (levels.length > 1 || levels[0] !== 'unknown') io.stdout.write(byLevel.map((l) => `  ${l.label}: pass@1 ${l.pass1.toFixed(2)}`).join('\n') + '\n');
  if (typeof values.out === 'string') {
    const out = path.resolve(io.cwd, values.out);
    await writeAtomic(out, JSON.stringify(Object.fromEntries(scored.map((s) => [s.key, s.results]))) + '\n');
    io.stdout.write(`verdicts written to ${out}\n`);
  }
  if (typeof values.report === 'string') {
    const wrong = scored.flatMap((s) => s.answers.flatMap((a, j) => (s.perAnswer[j] === false ? [{ s, a }] : []))).slice(0, 24);
    const written = await writeReport(path.resolve(io.cwd, values.report), {
      schema: 'execverify.report/1',
      title: `LiveCodeBench execution: ${path.basename(values.generations)}`,
      subtitle: `LiveCodeBench's rules${values.cot === true ? ', chain of thought' : ''} · ${scored.length} problems`,
      created: new Date().toISOString(),
      metrics: [
        { name: 'pass@1', value: lcbPass1(scored), unit: 'percent', n: scored.length },
        ...byLevel.map((l) => ({ name: `pass@1, ${l.label}`, value: l.pass1, unit: 'percent' as const })),
      ],
      groups: [
        {
          name: 'Answers right by difficulty',
          about: 'Answers that ran (those holding the input call are left out, as LiveCodeBench does).',
          rows: byLevel.map(({ label, n, correct }) => ({ label, n, correct })),
        },
      ],
      examples: wrong.map(({ s, a }) => ({
        id: s.key,
        group: s.row.difficulty ?? 'unknown',
        question: `assert ${s.row.input} == ??`,
        answer: a,
        expected: s.row.output,
        reason: 'assert_failed',
      })),
    });
    io.stdout.write(`report written to ${written.html}\n`);
  }
  return 0;
}

function printDatasetSummary(io: { stdout: NodeJS.WritableStream }, run: DatasetRun): void {
  const s = summarize(run);
  const kinds = [...s.kinds.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, [c, n]]) => `${k} ${pct(n ? c / n : 0)} (${n})`);
  io.stdout.write(
    `${run.label}: pass@1 ${pct(s.pass1)}${s.k > 1 ? ` pass@${s.k} ${pct(s.passK)}` : ''} mean reward ${s.meanReward.toFixed(3)} | ${kinds.join(' | ')}\n`,
  );
}

async function runDataset(values: Record<string, unknown>, store: string, io: Parameters<Command['run']>[2]): Promise<number> {
  const provider = providerFor(values, io);
  if (!provider) throw new UsageError('no model to evaluate: pass --base-url URL --model NAME (or EXECVERIFY_BASE_URL / EXECVERIFY_MODEL), or --baseline');
  const k = positiveInt(values.samples, '--samples') ?? 1;
  const limit = positiveInt(values.limit, '--limit');
  let read;
  try {
    read = readStore(path.resolve(io.cwd, store));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const records = limit !== undefined ? read.items.slice(0, limit) : read.items;
  if (read.invalid) io.stderr.write(`warning: ${read.invalid} lines of the store are not valid records; they are left out\n`);
  if (!records.length) throw new UsageError(`the store ${store} has no records`);
  const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
  const pool = new TracerPool({ python, size: positiveInt(values.workers, '--workers') ?? Math.min(4, os.availableParallelism()), env: io.env });
  const judge = new JudgeClient(pool);
  const runs: DatasetRun[] = [];
  try {
    const label = provider.info.kind === 'baseline' ? 'baseline' : provider.info.label;
    const progress = new Progress({ label: `dataset: ${label}`, total: records.length, write: (l) => io.stderr.write(`${l}\n`) });
    runs.push(await runStore(provider, judge, records, { label, samples: k, signal: io.signal, onAnswered: () => progress.tick() }));
    if (provider.info.kind !== 'baseline') io.stdout.write(`model calls: ${formatRunStats(provider.stats())}\n`);
    if (provider.info.kind !== 'baseline' && values['no-baseline'] !== true)
      runs.push(await runStore(new BaselineProvider(), judge, records, { label: 'baseline', samples: 1, signal: io.signal }));
  } finally {
    await pool.close();
  }
  const failed = runs[0]!.results.filter((r) => r.error);
  if (failed.length) io.stderr.write(`warning: ${failed.length} records got no answer from the model (first: ${failed[0]!.error}); they count as wrong\n`);
  io.stdout.write(`dataset ${store}: ${records.length} records, ${k} sample${k === 1 ? '' : 's'} each\n`);
  for (const run of runs) printDatasetSummary(io, run);
  if (typeof values.out === 'string') {
    const out = path.resolve(io.cwd, values.out);
    const body = Object.fromEntries(
      runs.map((run) => [
        run.label,
        Object.fromEntries(
          run.results.map((r) => [r.record.id, r.samples.map((s) => ({ text: s.text, reward: s.reward.reward, breakdown: s.reward.breakdown }))]),
        ),
      ]),
    );
    await writeAtomic(out, JSON.stringify(body) + '\n');
    io.stdout.write(`results written to ${out}\n`);
  }
  if (typeof values.report === 'string') {
    const written = await writeReport(
      path.resolve(io.cwd, values.report),
      datasetReport(runs, {
        title: `Dataset ${path.basename(path.resolve(io.cwd, store))}: ${runs[0]!.label}`,
        subtitle: `${records.length} records, ${k} sample${k === 1 ? '' : 's'} each`,
        created: new Date().toISOString(),
      }),
    );
    io.stdout.write(`report written to ${written.html}\n`);
  }
  return 0;
}
