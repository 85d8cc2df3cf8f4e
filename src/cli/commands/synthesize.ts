// `execverify synthesize`: constraint-based programs from a model, executed
// and filtered into verified samples (docs/synthesis.md). Three forms:
//   synthesize --count N --out DIR                 online, against the configured endpoint
//   synthesize prompts --count N --out REQ.jsonl   the requests as OpenAI Batch JSONL
//   synthesize import RESULTS.jsonl --requests REQ.jsonl --out DIR
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UsageError, type Command, type CliIO } from '../command';
import type { PassBand } from '../../engine/harvest/difficulty';
import { parseBand } from '../../engine/synthesize/select';
import { streamProgress, silentProgress } from '../../engine/harvest/progress';
import { harvestAsking, harvestTemplate } from '../../engine/harvest/questioner';
import { ModelProvider } from '../../engine/model';
import { ModelClient } from '../../engine/model/client';
import { endpointFromEnv, type EndpointConfig } from '../../engine/model/config';
import { pythonTracerDir, resolvePython } from '../../engine/python';
import { TracerPool } from '../../engine/trace/runner';
import { importSynthesisResults, inputsBatchItems, readRequests, specsOfRequests, writeSynthesisRequests } from '../../engine/synthesize/batch';
import { writeBatchFile } from '../../engine/model/batch';
import { loadConstraints, sampleSpecs, type Spec } from '../../engine/synthesize/constraints';
import { synthesize } from '../../engine/synthesize/pipeline';
import { buildSynthesisReport, renderSynthesisReport, writeSynthesisReport } from '../../engine/synthesize/report';
import { modelSource } from '../../engine/synthesize/source';
import { runRayDriver } from './harvest-ray';

function count(values: Record<string, unknown>, flag: string, fallback?: number, min = 1): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} needs an integer ≥ ${min}, got '${String(raw)}'`);
  return n;
}

function levels(raw: unknown): number[] | undefined {
  if (raw === undefined) return undefined;
  const out = String(raw)
    .split(',')
    .map((s) => Number(s.trim()));
  if (out.some((n) => !Number.isInteger(n) || n < 1)) throw new UsageError(`--levels takes level numbers, e.g. 1,2,3; got '${String(raw)}'`);
  return out;
}

export function passBandOf(raw: unknown): PassBand | undefined {
  if (raw === undefined) return undefined;
  const band = parseBand(String(raw));
  if (typeof band === 'string') throw new UsageError(band);
  return band;
}

function endpoint(values: Record<string, unknown>, io: CliIO, prefix = ''): EndpointConfig | undefined {
  const base = values[`${prefix}base-url`];
  const model = values[`${prefix}model`];
  return endpointFromEnv(io.env, {
    ...(typeof base === 'string' ? { baseURL: base } : {}),
    ...(typeof model === 'string' ? { model } : {}),
  });
}

const COMMON = {
  out: { type: 'string', short: 'o' },
  count: { type: 'string', short: 'n' },
  seed: { type: 'string' },
  levels: { type: 'string' },
  constraints: { type: 'string' },
  requests: { type: 'string' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  'reference-base-url': { type: 'string' },
  'reference-model': { type: 'string' },
  k: { type: 'string' },
  'pass-band': { type: 'string' },
  mutate: { type: 'string' },
  inputs: { type: 'string' },
  from: { type: 'string' },
  limit: { type: 'string' },
  'max-time': { type: 'string' },
  template: { type: 'string' },
  'hash-seed': { type: 'string' },
  jobs: { type: 'string' },
  python: { type: 'string' },
  specs: { type: 'string' },
  'dedup-log': { type: 'string' },
  executor: { type: 'string' },
  address: { type: 'string' },
  'specs-per-task': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  json: { type: 'boolean' },
} as const;

async function writePrompts(values: Record<string, unknown>, io: CliIO): Promise<number> {
  if (typeof values.out !== 'string') throw new UsageError('--out REQUESTS.jsonl is required');
  const model = typeof values.model === 'string' ? values.model : (io.env.EXECVERIFY_MODEL ?? 'model');
  const file = path.resolve(io.cwd, values.out);
  const inputs = count(values, 'inputs', 0, 0)!;
  if (inputs > 0) {
    // Round 2: more calls of the programs of --from DIR that yielded samples.
    if (typeof values.from !== 'string') throw new UsageError('--inputs N needs --from DIR (a synthesis --out whose kept programs get more calls)');
    const items = inputsBatchItems(path.resolve(io.cwd, values.from), inputs);
    await writeBatchFile(file, { model, api: 'chat' }, items);
    io.stdout.write(`${items.length} second-round requests (${inputs} calls each) written to ${values.out}\n`);
    io.stdout.write(`next: run them, then execverify synthesize import RESULTS.jsonl --requests ${values.out} --inputs ${inputs} --out ${values.from}\n`);
    return 0;
  }
  const n = count(values, 'count');
  if (n === undefined) throw new UsageError('--count N is required');
  const constraints = loadConstraints(typeof values.constraints === 'string' ? path.resolve(io.cwd, values.constraints) : undefined);
  const specs = sampleSpecs(constraints, { count: n, seed: count(values, 'seed', 0, 0)!, levels: levels(values.levels) });
  const lines = await writeSynthesisRequests(file, { model }, specs, constraints);
  io.stdout.write(`${lines} requests (${constraints.name}@${constraints.version}) written to ${values.out}\n`);
  io.stdout.write(`next: run them (e.g. python -m vllm.entrypoints.openai.run_batch -i ${values.out} -o results.jsonl --model ${model}), then\n`);
  io.stdout.write(`      execverify synthesize import results.jsonl --requests ${values.out} --out DIR\n`);
  return 0;
}

/** Flags of the Ray driver itself; every other flag goes to each slice's synthesize. */
const RAY_DRIVER_FLAGS = new Set(['out', 'count', 'executor', 'address', 'specs-per-task', 'json']);

/** --executor ray: slices of the spec range as Ray tasks, the dedup replayed in spec order (docs/scale.md). */
function synthesizeOnRay(values: Record<string, unknown>, io: CliIO): Promise<number> {
  if (typeof values.out !== 'string') throw new UsageError('--out DIR is required (the merged store)');
  const n = count(values, 'count');
  if (n === undefined) throw new UsageError('--count N is required');
  const args = ['-m', 'execverify.ray_synthesize', '--count', String(n), '--out', path.resolve(io.cwd, values.out)];
  if (typeof values.address === 'string') args.push('--address', values.address);
  const perTask = count(values, 'specs-per-task');
  if (perTask !== undefined) args.push('--specs-per-task', String(perTask));
  args.push('--');
  for (const [flag, value] of Object.entries(values)) {
    if (RAY_DRIVER_FLAGS.has(flag) || value === undefined || value === false) continue;
    args.push(`--${flag}`, ...(value === true ? [] : [flag === 'constraints' ? path.resolve(io.cwd, String(value)) : String(value)]));
  }
  return runRayDriver(args, io);
}

async function run(values: Record<string, unknown>, io: CliIO, imported?: { results: string }): Promise<number> {
  if (typeof values.out !== 'string') throw new UsageError('--out DIR is required (where the samples and the report go)');
  const out = path.resolve(io.cwd, values.out);
  const constraints = loadConstraints(typeof values.constraints === 'string' ? path.resolve(io.cwd, values.constraints) : undefined);
  const template = harvestTemplate(String(values.template ?? 'execverify'));
  if (typeof template === 'string') throw new UsageError(template);
  const band = passBandOf(values['pass-band']);
  const maxTime = values['max-time'] === undefined ? undefined : Number(values['max-time']);
  if (maxTime !== undefined && !(maxTime > 0)) throw new UsageError(`--max-time needs a positive number of seconds, got '${String(values['max-time'])}'`);
  // An import's --model names the model of the request file; it is an endpoint (the reference) only with --base-url.
  const online = imported && values['base-url'] === undefined && io.env.EXECVERIFY_BASE_URL === undefined ? undefined : endpoint(values, io);
  let specs: Spec[];
  let ids: string[] = [];
  const inputs = count(values, 'inputs', 0, 0)!;
  if (imported) {
    if (typeof values.requests !== 'string') throw new UsageError('--requests REQUESTS.jsonl is required (the file `synthesize prompts` wrote)');
    const model = typeof values.model === 'string' ? values.model : (io.env.EXECVERIFY_MODEL ?? 'model');
    const read = specsOfRequests(
      readRequests(path.resolve(io.cwd, values.requests)),
      constraints,
      { model },
      {
        levels: levels(values.levels),
        out,
        ...(inputs ? { inputs } : {}),
      },
    );
    specs = read.specs;
    ids = read.ids;
    let resultsText: string;
    try {
      resultsText = fs.readFileSync(path.resolve(io.cwd, imported.results), 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read the results file ${imported.results}: ${(err as Error).message}`);
    }
    fs.mkdirSync(out, { recursive: true });
    const summary = importSynthesisResults(out, resultsText, ids);
    for (const e of summary.errors.slice(0, 10)) io.stderr.write(`warning: results line ${e.line}${e.customId ? ` (${e.customId})` : ''}: ${e.message}\n`);
    if (summary.missing.length) io.stderr.write(`warning: ${summary.missing.length} requests have no result line (e.g. ${summary.missing[0]})\n`);
    io.stderr.write(`imported ${summary.imported} answers\n`);
  } else {
    const n = count(values, 'count');
    if (n === undefined) throw new UsageError('--count N is required');
    if (!online)
      throw new UsageError(
        'synthesis needs a model: pass --base-url URL --model NAME (or set EXECVERIFY_BASE_URL and EXECVERIFY_MODEL), or use `synthesize prompts` for a batch run',
      );
    specs = sampleSpecs(constraints, { count: n, seed: count(values, 'seed', 0, 0)!, levels: levels(values.levels) });
    // A shard of a sharded run: spec i is the same spec whatever the slice (it depends on seed and index only).
    if (values.specs !== undefined) {
      const m = /^(\d+):(\d+)$/.exec(String(values.specs));
      if (!m || Number(m[1]) >= Number(m[2]) || Number(m[2]) > n)
        throw new UsageError(`--specs takes FROM:TO with 0 ≤ FROM < TO ≤ --count, got '${String(values.specs)}'`);
      specs = specs.slice(Number(m[1]), Number(m[2]));
    }
  }
  // The reference model of the difficulty filter: its own endpoint, or the synthesis one.
  const reference = endpoint(values, io, 'reference-') ?? online;
  const k = count(values, 'k', reference ? 10 : 0, 0)!;
  if (band && k === 0) throw new UsageError('--pass-band needs answers to score: give --k N and a (reference) model');
  if (k > 0 && !reference) throw new UsageError('--k needs a model to answer: pass --reference-base-url/--reference-model (or --base-url/--model)');

  const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
  const jobs = count(values, 'jobs');
  const judgePool = new TracerPool({ python, env: io.env, ...(jobs ? { size: jobs } : {}) });
  const client = !imported && online ? new ModelClient(online) : undefined;
  const scorerProvider = k > 0 && reference ? new ModelProvider(reference) : undefined;
  const { questioner, scorer } = harvestAsking(template, scorerProvider ? { provider: scorerProvider, workers: judgePool, k } : undefined);
  const progress = values.quiet ? silentProgress : streamProgress(io.stderr as NodeJS.WriteStream);
  const started = Date.now();
  try {
    const result = await synthesize(
      {
        out,
        specs,
        constraints,
        limit: count(values, 'limit'),
        maxTimeS: maxTime,
        passBand: band,
        mutate: count(values, 'mutate', 0, 0),
        inputs,
        ...(values['hash-seed'] !== undefined ? { hashSeed: count(values, 'hash-seed', 0, 0)! } : {}),
        concurrency: judgePool.size,
        ...(typeof values['dedup-log'] === 'string' ? { dedupLog: path.resolve(io.cwd, values['dedup-log']) } : {}),
      },
      {
        python,
        tracerDir: pythonTracerDir(),
        env: io.env,
        ...(client ? { source: modelSource(client) } : {}),
        questioner,
        scorer,
        progress,
        signal: io.signal,
        warn: (line) => io.stderr.write(`warning: ${line}\n`),
      },
    );
    const report = buildSynthesisReport({
      out,
      constraints: `${constraints.name}@${constraints.version}`,
      specs: specs.length,
      counters: result.counters,
      scorer: scorerProvider ? { label: scorerProvider.info.label, stats: scorerProvider.stats() } : null,
      totalSeconds: (Date.now() - started) / 1000,
      stoppedEarly: result.stoppedEarly,
    });
    const files = writeSynthesisReport(out, report);
    if (values.json) io.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else {
      io.stdout.write(renderSynthesisReport(report));
      io.stdout.write(`\nsamples: ${path.join(out, 'samples.jsonl')}\nreport: ${files.markdown}\n`);
      io.stdout.write(
        `next: execverify export ${values.out} --format verl --out ${path.join(String(values.out), 'verl')} [--levels 1,2] [--pass-band paper]\n`,
      );
    }
    return 0;
  } finally {
    client?.close();
    scorerProvider?.close();
    await judgePool.close();
  }
}

export const synthesizeCommand: Command = {
  name: 'synthesize',
  summary:
    'Synthesize programs under structural constraints with a model (online, or through OpenAI Batch JSONL), execute them under the sandbox, keep the deterministic ones as verified samples (DIR/samples.jsonl) with a report (DIR/report.md).',
  usage:
    'execverify synthesize --count N --out DIR [--base-url URL --model NAME] [--seed S] [--levels 1,2] [--constraints FILE] [--k 10] [--reference-base-url URL --reference-model NAME] [--pass-band MIN,MAX|paper] [--mutate N] [--inputs N] [--limit N] [--max-time S] [--jobs N] [--quiet] [--json] [--executor local|ray [--address ADDR] [--specs-per-task K]]\n' +
    '       execverify synthesize prompts --count N --out REQUESTS.jsonl [--seed S] [--levels 1,2] [--constraints FILE] [--model NAME]\n' +
    '       execverify synthesize prompts --inputs N --from DIR --out REQUESTS2.jsonl [--model NAME]   (round 2: more calls of the kept programs)\n' +
    '       execverify synthesize prompts --inputs N --from DIR --out REQUESTS2.jsonl [--model NAME]   (second round: more calls of kept programs)\n' +
    '       execverify synthesize import RESULTS.jsonl --requests REQUESTS.jsonl --out DIR [--inputs N] [same filter options as above]',
  options: COMMON,
  async run(values, positionals, io) {
    const [sub, ...rest] = positionals;
    if (sub !== undefined && values.executor !== undefined) throw new UsageError('--executor applies to the online form (synthesize --count N --out DIR)');
    if (sub === 'prompts') {
      if (rest.length) throw new UsageError('synthesize prompts takes no positional arguments');
      return writePrompts(values, io);
    }
    if (sub === 'import') {
      if (rest.length !== 1) throw new UsageError('give exactly one RESULTS.jsonl (the Batch output file)');
      return run(values, io, { results: rest[0]! });
    }
    if (sub !== undefined) throw new UsageError(`unknown form '${sub}': synthesize, synthesize prompts, or synthesize import`);
    const executor = String(values.executor ?? 'local');
    if (executor !== 'local' && executor !== 'ray') throw new UsageError(`--executor must be local or ray, not '${executor}'`);
    if (executor === 'ray') return synthesizeOnRay(values, io);
    if (values.address !== undefined || values['specs-per-task'] !== undefined) throw new UsageError('--address and --specs-per-task apply to --executor ray');
    return run(values, io);
  },
};
