// A change to python-tracer against another version of it, on the cold row
// of `npm run bench:tracer` (a new pool of 2 traces the 800 CRUXEval
// programs with traceMany): the two trees run alternately, one cold pool
// each time, so that a machine whose speed drifts slows both alike.
//
//   git archive REV python-tracer | tar -x -C /tmp/before
//   node --import tsx bench/tracer_ab.ts /tmp/before/python-tracer [ROUNDS]
//
// Prints, for each tree, the median wall time of ROUNDS (default 10) cold
// runs and every run. Everything but python-tracer is this checkout's (the
// engine, the pool, the validation). EXECVERIFY_PYTHON picks the
// interpreter, as for bench:tracer. docs/security.md, "What isolation costs".
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolvePython } from '../src/engine/python';
import { TracerPool } from '../src/engine/trace/runner';

const BENCH = join(__dirname, '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');

async function cold(python: string, tracerDir: string, jobs: Parameters<TracerPool['traceMany']>[0]): Promise<number> {
  const t0 = performance.now();
  const pool = new TracerPool({ python, tracerDir, env: process.env });
  try {
    const traces = await pool.traceMany(jobs);
    const ms = performance.now() - t0;
    const failed = traces.find((t) => t instanceof Error);
    if (failed) throw failed;
    return ms;
  } finally {
    await pool.close();
  }
}

async function main(): Promise<void> {
  const [before, rounds = '10'] = process.argv.slice(2);
  if (!before) throw new Error('usage: node --import tsx bench/tracer_ab.ts BEFORE/python-tracer [ROUNDS]');
  const rows = readFileSync(BENCH, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; code: string; input: string });
  const jobs = rows.map((r) => ({ source: r.code, path: `${r.id}.py`, entry: { kind: 'call' as const, expr: `f(${r.input})` } }));
  const python = resolvePython(undefined, process.env);
  const trees = { before, now: join(__dirname, '..', 'python-tracer') };
  const ms: Record<keyof typeof trees, number[]> = { before: [], now: [] };
  await cold(python, trees.now, jobs); // the file cache, both trees
  await cold(python, trees.before, jobs);
  for (let i = 0; i < Number(rounds); i++) {
    for (const k of i % 2 ? (['before', 'now'] as const) : (['now', 'before'] as const)) ms[k].push(await cold(python, trees[k], jobs));
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1] ?? Number.NaN;
  console.log(`cold pool of 2, 800 CRUXEval jobs, ${rounds} interleaved rounds (${python}):`);
  for (const k of ['before', 'now'] as const) {
    console.log(`  ${k.padEnd(6)} ${median(ms[k]).toFixed(0)} ms  [${ms[k].map((x) => x.toFixed(0)).join(' ')}]  ${trees[k]}`);
  }
  console.log(`  now / before: ${(median(ms.now) / median(ms.before)).toFixed(3)}`);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exitCode = 1;
});
