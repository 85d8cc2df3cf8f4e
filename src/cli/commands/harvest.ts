// `execverify harvest PROJECT --out DIR`: run a project's own tests, keep the
// calls into its functions that re-run standalone, and store them as verified
// samples with questions, ground truth and a report. See docs/harvest.md.
import * as path from 'node:path';
import { UsageError, type Command } from '../command';
import { parseShard } from '../../engine/dataset/exporters';
import { harvestOnRay } from './harvest-ray';
import { parsePassBand } from '../../engine/harvest/difficulty';
import { harvest } from '../../engine/harvest/pipeline';
import { streamProgress, silentProgress } from '../../engine/harvest/progress';
import { harvestAsking, harvestTemplate } from '../../engine/harvest/questioner';
import { renderReport, writeReport } from '../../engine/harvest/report';
import { BaselineProvider, ModelProvider, type Provider } from '../../engine/model';
import { endpointFromEnv } from '../../engine/model/config';
import { pythonTracerDir, resolvePython } from '../../engine/python';
import { TracerPool } from '../../engine/trace/runner';
import { mutateStore } from '../../engine/synthesize/mutate';

function positiveInt(values: Record<string, unknown>, flag: string): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${flag} needs a positive integer, got '${String(raw)}'`);
  return n;
}

function fraction(values: Record<string, unknown>, flag: string, fallback: number): number {
  const raw = values[flag];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n >= 1) throw new UsageError(`--${flag} needs a number in [0, 1), got '${String(raw)}'`);
  return n;
}

/** PYTHONHASHSEED values are 0 … 4294967295. */
function hashSeed(raw: unknown): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 4294967295) throw new UsageError(`--hash-seed needs an integer in [0, 4294967295], got '${String(raw)}'`);
  return n;
}

/**
 * `--pass-env NAME` (repeatable, or NAME,NAME): variables of this environment
 * the project's tests need. Nothing else of it reaches them (see workerEnv).
 */
function passedEnv(raw: unknown, env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  if (raw === undefined) return undefined;
  const names = (Array.isArray(raw) ? raw : [raw])
    .flatMap((v) => String(v).split(','))
    .map((n) => n.trim())
    .filter(Boolean);
  const out: Record<string, string> = {};
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--pass-env needs variable names, got '${name}'`);
    const value = env[name];
    if (value === undefined) throw new UsageError(`--pass-env ${name}: ${name} is not set in this environment; set it or drop the flag`);
    out[name] = value;
  }
  return out;
}

/** `--allow-import PKG` (repeatable, or PKG,PKG): third-party top-level packages a sample may import. */
function allowedImports(raw: unknown): string[] {
  if (raw === undefined) return [];
  const names = (Array.isArray(raw) ? raw : [raw])
    .flatMap((v) => String(v).split(','))
    .map((n) => n.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--allow-import needs top-level package names (import names, e.g. yaml), got '${name}'`);
  }
  return [...new Set(names)];
}

export const harvestCommand: Command = {
  name: 'harvest',
  summary:
    "Run PROJECT's own tests, capture calls into its functions, keep those that re-run standalone, and store them as verified samples (DIR/samples.jsonl) with a report (DIR/report.md).",
  usage:
    'execverify harvest PROJECT --out DIR [--limit N] [--max-time SECONDS] [--shard i/n] [--secrets drop|redact] ' +
    '[--runner auto|unittest|pytest] [--per-function N] [--template execverify|execverify-authors] [--hash-seed 0] [--test-fraction 0.1] [--validation-fraction 0] ' +
    '[--no-answers] [--base-url URL --model NAME] [--k N] [--pass-band MIN,MAX] [--jobs N] [--python PATH] [--pass-env NAME]... [--allow-import PKG]... [--mutate N] [--quiet] [--json] [--executor local|ray [--address ADDR] PROJECT...]',
  options: {
    out: { type: 'string', short: 'o' },
    limit: { type: 'string' },
    'max-time': { type: 'string' },
    shard: { type: 'string' },
    secrets: { type: 'string' },
    runner: { type: 'string' },
    'per-function': { type: 'string' },
    template: { type: 'string' },
    'hash-seed': { type: 'string' },
    'test-fraction': { type: 'string' },
    'validation-fraction': { type: 'string' },
    'no-answers': { type: 'boolean' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    k: { type: 'string' },
    'pass-band': { type: 'string' },
    jobs: { type: 'string' },
    python: { type: 'string' },
    'pass-env': { type: 'string', multiple: true },
    'allow-import': { type: 'string', multiple: true },
    mutate: { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
    json: { type: 'boolean' },
    executor: { type: 'string' },
    address: { type: 'string' },
  },
  async run(values, positionals, io) {
    // --executor ray: each PROJECT's harvest as a Ray task, merged into --out (docs/scale.md).
    const executor = (values.executor ?? 'local') as string;
    if (executor !== 'local' && executor !== 'ray') throw new UsageError(`--executor must be local or ray, not '${executor}'`);
    if (executor === 'ray') return harvestOnRay(values, positionals, io);
    if (values.address !== undefined) throw new UsageError('--address applies to --executor ray');
    if (positionals.length !== 1) throw new UsageError('give exactly one PROJECT directory');
    if (typeof values.out !== 'string') throw new UsageError('--out DIR is required (where the samples and the report go)');
    const project = path.resolve(io.cwd, positionals[0]!);
    const out = path.resolve(io.cwd, values.out);
    const shard = values.shard === undefined ? undefined : parseShard(String(values.shard));
    if (typeof shard === 'string') throw new UsageError(shard);
    const band = values['pass-band'] === undefined ? undefined : parsePassBand(String(values['pass-band']));
    if (typeof band === 'string') throw new UsageError(band);
    const secrets = (values.secrets ?? 'drop') as string;
    if (secrets !== 'drop' && secrets !== 'redact') throw new UsageError(`--secrets must be drop or redact, not '${secrets}'`);
    const runner = (values.runner ?? 'auto') as string;
    if (!['auto', 'unittest', 'pytest'].includes(runner)) throw new UsageError(`--runner must be auto, unittest or pytest, not '${runner}'`);
    const template = harvestTemplate(String(values.template ?? 'execverify'));
    if (typeof template === 'string') throw new UsageError(template);
    const maxTime = values['max-time'] === undefined ? undefined : Number(values['max-time']);
    if (maxTime !== undefined && !(maxTime > 0)) throw new UsageError(`--max-time needs a positive number of seconds, got '${String(values['max-time'])}'`);
    if (band && values['no-answers']) throw new UsageError('--pass-band needs answers; drop --no-answers');
    const k = positiveInt(values, 'k') ?? 1;
    const jobs = positiveInt(values, 'jobs');

    const jobEnv = passedEnv(values['pass-env'], io.env);
    const allowImports = allowedImports(values['allow-import']);

    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    const pool = new TracerPool({ python, env: io.env, ...(jobEnv ? { jobEnv } : {}), ...(jobs ? { size: jobs } : {}) });
    let provider: Provider | undefined;
    if (!values['no-answers']) {
      const endpoint = endpointFromEnv(io.env, {
        ...(typeof values['base-url'] === 'string' ? { baseURL: values['base-url'] } : {}),
        ...(typeof values.model === 'string' ? { model: values.model } : {}),
      });
      provider = endpoint ? new ModelProvider(endpoint) : new BaselineProvider();
    }
    const { questioner, scorer } = harvestAsking(template, provider ? { provider, workers: pool, k } : undefined);
    const progress = values.quiet ? silentProgress : streamProgress(io.stderr as NodeJS.WriteStream);
    try {
      const result = await harvest(
        {
          project,
          out,
          limit: positiveInt(values, 'limit'),
          maxTimeS: maxTime,
          shard,
          secrets,
          runner: runner as 'auto' | 'unittest' | 'pytest',
          perFunction: positiveInt(values, 'per-function'),
          ...(allowImports.length ? { allowImports } : {}),
          ...(values['hash-seed'] !== undefined ? { hashSeed: hashSeed(values['hash-seed']) } : {}),
          splits: { test: fraction(values, 'test-fraction', 0.1), validation: fraction(values, 'validation-fraction', 0) },
          passBand: band,
          concurrency: pool.size,
        },
        {
          python,
          tracerDir: pythonTracerDir(),
          env: io.env,
          ...(jobEnv ? { jobEnv } : {}),
          questioner,
          scorer,
          progress,
          signal: io.signal,
          warn: (line) => io.stderr.write(`warning: ${line}\n`),
        },
      );
      const files = writeReport(out, result.report);
      // --mutate N: coverage-guided mutated inputs of the stored samples (docs/synthesis.md#mutation).
      const mutate = positiveInt(values, 'mutate');
      if (mutate && !io.signal.aborted) {
        const m = await mutateStore(
          {
            out,
            count: mutate,
            concurrency: pool.size,
            ...(jobEnv ? { jobEnv } : {}),
            ...(values['hash-seed'] !== undefined ? { hashSeed: hashSeed(values['hash-seed']) } : {}),
          },
          { python, tracerDir: pythonTracerDir(), env: io.env, questioner, scorer, signal: io.signal },
        );
        io.stderr.write(
          `mutation: ${m.mutationTried} mutated inputs tried, ${m.mutationKept} kept (lines + branch edges covered ${m.coverageBefore} → ${m.coverageAfter})\n`,
        );
      }
      if (result.report.samples === 0) {
        const ran = result.report.tests.run;
        io.stderr.write(
          ran === 0
            ? `warning: no tests ran in ${project} (${result.report.tests.runner ?? 'no runner'}): harvesting needs the project's own unittest (test*.py) or pytest tests\n`
            : 'warning: no samples kept; the report lists why each captured call was dropped\n',
        );
      }
      if (values.json) io.stdout.write(JSON.stringify(result.report, null, 2) + '\n');
      else {
        io.stdout.write(renderReport(result.report));
        io.stdout.write(`\nsamples: ${path.join(out, 'samples.jsonl')}\nreport: ${files.markdown}\n`);
        io.stdout.write(`next: execverify export ${values.out} --format verl --out ${path.join(values.out, 'verl')}\n`);
      }
      return 0;
    } finally {
      provider?.close();
      await pool.close();
    }
  },
};
