// Synthesis benchmark: samples per second through the execution, determinism
// and difficulty stages, with an instant local model server (the model's time
// is not what is measured), against a baseline in the same run (one traced run
// per candidate, the tracer alone); and input-mutation throughput per core.
// Writes bench/results/synthesize.json. Run: npm run bench:synthesize [-- --quick]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { harvestAsking } from '../src/engine/harvest/questioner';
import { ModelProvider } from '../src/engine/model';
import { ModelClient } from '../src/engine/model/client';
import { BUILTIN_TEMPLATES } from '../src/engine/model/templates';
import { pythonTracerDir, resolvePython } from '../src/engine/python';
import { loadConstraints, sampleSpecs } from '../src/engine/synthesize/constraints';
import { synthesize } from '../src/engine/synthesize/pipeline';
import { modelSource } from '../src/engine/synthesize/source';
import { TracerPool } from '../src/engine/trace/runner';
import { startOpenAIServer } from '../test/support/openai-server';

const quick = process.argv.includes('--quick');
const SPECS = quick ? 8 : 24;
const K = 10;
const JOBS = Math.max(1, Math.min(2, os.availableParallelism()));
const python = resolvePython(undefined, process.env);
const template = BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!;

/** Spec i's program: distinct constants, so no two are near-duplicates. */
function program(i: number): { code: string; calls: string[] } {
  const code = [
    `def score_${i}(xs, limit):`,
    '    total = 0',
    '    for x in xs:',
    `        if x % ${i + 2} == 0:`,
    '            total += x',
    '        elif x > limit:',
    `            total -= ${i + 1}`,
    '        else:',
    '            total += 1',
    '    return total',
    '',
  ].join('\n');
  return { code, calls: [`score_${i}([1, 2, 3, 4, ${i + 5}], 3)`, `score_${i}([], 0)`, `score_${i}([${i}, ${2 * i}], ${i})`] };
}
const answer = (i: number) => {
  const p = program(i);
  return `\`\`\`python\n${p.code}\`\`\`\n\`\`\`\n${p.calls.join('\n')}\n\`\`\`\n`;
};

async function run(label: string, options: { k: number; mutate: number; jobs: number }) {
  const server = await startOpenAIServer({
    record: false,
    script: (req) => {
      const content = ((req.body?.messages ?? []) as { content: string }[]).at(-1)?.content ?? '';
      const m = /Program s\d+-(\d+):/.exec(content);
      if (m) return { text: answer(Number(m[1])) };
      const n = Number(req.body?.n ?? 1);
      return { text: Array.from({ length: n }, () => '<answer>\nwrong\n</answer>') };
    },
  });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-synth-'));
  const constraints = loadConstraints();
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0, concurrency: 16 });
  const judge = new TracerPool({ python, size: options.jobs });
  const provider = options.k ? new ModelProvider({ baseURL: server.url, model: 'ref', retries: 0, concurrency: 16 }) : undefined;
  const { questioner, scorer } = harvestAsking(template, provider ? { provider, workers: judge, k: options.k } : undefined);
  const t0 = performance.now();
  try {
    const result = await synthesize(
      { out, specs: sampleSpecs(constraints, { count: SPECS, seed: 0 }), constraints, concurrency: options.jobs, mutate: options.mutate },
      { python, tracerDir: pythonTracerDir(), env: process.env, source: modelSource(client), questioner, ...(scorer ? { scorer } : {}) },
    );
    const seconds = (performance.now() - t0) / 1000;
    const samples = fs.readFileSync(path.join(out, 'samples.jsonl'), 'utf8').trim().split('\n').filter(Boolean).length;
    const stage = result.counters.stageSeconds;
    return { label, samples, seconds, samplesPerSecond: samples / seconds, stageSeconds: stage, counters: result.counters };
  } finally {
    client.close();
    provider?.close();
    await judge.close();
    await server.close();
    fs.rmSync(out, { recursive: true, force: true });
  }
}

/** The baseline: each candidate traced once, nothing else (the tracer alone). */
async function baseline(jobs: number) {
  const pool = new TracerPool({ python, size: jobs });
  const jobsList = Array.from({ length: SPECS }, (_, i) => program(i)).flatMap((p) =>
    p.calls.map((expr) => ({ path: 'p.py', source: p.code, entry: { kind: 'call' as const, expr } })),
  );
  try {
    await pool.trace(jobsList[0]!); // workers started
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: jobs }, async () => {
        for (let j = next++; j < jobsList.length; j = next++) await pool.trace(jobsList[j]!);
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { traces: jobsList.length, seconds, tracesPerSecond: jobsList.length / seconds };
  } finally {
    await pool.close();
  }
}

/** Mutated inputs generated (the synth_mutate op alone) per second on one core. */
async function mutationOp() {
  const pool = new TracerPool({ python, size: 1 });
  try {
    const call = "f([1, 2, 3, 4], 'abc', {'k': (1, 2)}, {5, 6}, 2.5)";
    await pool.request('synth_mutate', { items: [{ call, seed: 0, count: 1 }] });
    const t0 = performance.now();
    let made = 0;
    for (let seed = 0; seed < (quick ? 20 : 100); seed++) {
      const r = (await pool.request('synth_mutate', { items: [{ call, seed, count: 20 }] })) as { results: { calls: string[] }[] };
      made += r.results[0]!.calls.length;
    }
    const seconds = (performance.now() - t0) / 1000;
    return { mutations: made, seconds, mutationsPerSecond: made / seconds };
  } finally {
    await pool.close();
  }
}

async function mainBench() {
  const base = await baseline(JOBS);
  console.error(`baseline done`);
  const exec = await run('execution+determinism', { k: 0, mutate: 0, jobs: JOBS });
  console.error('execution done');
  const diff = await run(`+difficulty(k=${K})`, { k: K, mutate: 0, jobs: JOBS });
  console.error('difficulty done');
  const mut = await run('mutation(8/call, 1 core)', { k: 0, mutate: 8, jobs: 1 });
  const op = await mutationOp();
  const mutationStage = mut.stageSeconds.mutate ?? 0;
  const results = {
    machine: { cpus: os.availableParallelism(), python, jobs: JOBS },
    specs: SPECS,
    baseline: base,
    runs: [exec, diff, mut].map((r) => ({
      label: r.label,
      samples: r.samples,
      seconds: round(r.seconds),
      samplesPerSecond: round(r.samplesPerSecond),
      modelSeconds: round(r.stageSeconds.model ?? 0),
      stageSeconds: Object.fromEntries(Object.entries(r.stageSeconds).map(([k, v]) => [k, round(v)])),
    })),
    /** A sample costs this many baseline traces (1 primary + 3 confirm runs, questions, store, difficulty). */
    costInBaselineTraces: {
      execution: round(base.tracesPerSecond / exec.samplesPerSecond),
      difficulty: round(base.tracesPerSecond / diff.samplesPerSecond),
    },
    mutation: {
      opMutationsPerSecondPerCore: round(op.mutationsPerSecond),
      triedPerSecondPerCore: round(mut.counters.mutationTried / Math.max(1e-9, mutationStage)),
      tried: mut.counters.mutationTried,
      kept: mut.counters.mutationKept,
      coverage: { fromCalls: mut.counters.coverageBefore, withMutations: mut.counters.coverageAfter },
    },
  };
  console.log(`baseline: ${base.traces} traces in ${round(base.seconds)} s = ${round(base.tracesPerSecond)} traces/s (${JOBS} workers)`);
  for (const r of results.runs) console.log(`${r.label}: ${r.samples} samples in ${r.seconds} s = ${r.samplesPerSecond} samples/s (model ${r.modelSeconds} s)`);
  console.log(
    `a sample costs ${results.costInBaselineTraces.execution} baseline traces (execution + determinism), ${results.costInBaselineTraces.difficulty} with difficulty k=${K}`,
  );
  console.log(
    `mutation: ${results.mutation.opMutationsPerSecondPerCore} mutated calls/s generated per core; ${results.mutation.triedPerSecondPerCore} tried (traced + coverage) /s per core; ${results.mutation.kept}/${results.mutation.tried} kept; coverage ${results.mutation.coverage.fromCalls} → ${results.mutation.coverage.withMutations}`,
  );
  fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, 'results', 'synthesize.json'), JSON.stringify(results, null, 2) + '\n');
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

void mainBench().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
