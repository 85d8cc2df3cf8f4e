// A change against another version, on the cold row of `npm run
// bench:tracer` (a new pool of 2 traces the 800 CRUXEval programs with
// traceMany): the two run alternately, one cold pool each time, so that a
// machine whose speed drifts slows both alike. BEFORE is either another
// python-tracer (everything else is this checkout's: the engine, the pool,
// the validation) or a whole checkout, whose engine and python-tracer both
// run (a change to the pool or the protocol):
//
//   git archive REV python-tracer | tar -x -C /tmp/before
//   node --import tsx bench/tracer_ab.ts /tmp/before/python-tracer [ROUNDS]
//   git worktree add /tmp/before REV && ln -s "$PWD/node_modules" /tmp/before/
//   node --import tsx bench/tracer_ab.ts /tmp/before [ROUNDS]
//
// Prints, for each, the median wall time of ROUNDS (default 10) cold runs
// and every run, and the CPU time of every process in them (bench/tree-cpu.ts). EXECVERIFY_PYTHON picks the interpreter, as for
// bench:tracer. docs/security.md, "What isolation costs".
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolvePython } from '../src/engine/python';
import { TracerPool } from '../src/engine/trace/runner';
import { treeCpuMs } from './tree-cpu';

const BENCH = join(__dirname, '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');

type Pools = typeof TracerPool;

/** One cold run: its wall ms, and the CPU ms of every process in it (the pool's, reaped once it is closed). */
async function cold(Pool: Pools, python: string, tracerDir: string, jobs: Parameters<TracerPool['traceMany']>[0]): Promise<[number, number]> {
  const cpu0 = treeCpuMs();
  const t0 = performance.now();
  const pool = new Pool({ python, tracerDir, env: process.env });
  let ms: number;
  try {
    const traces = await pool.traceMany(jobs);
    ms = performance.now() - t0;
    const failed = traces.find((t) => t instanceof Error);
    if (failed) throw failed;
  } finally {
    await pool.close();
  }
  return [ms, treeCpuMs() - cpu0];
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
  // a whole checkout: its own engine, loaded beside this one's, and its python-tracer
  const checkout = existsSync(join(before, 'src', 'engine', 'trace', 'runner.ts'));
  const pools: Record<'before' | 'now', Pools> = {
    before: checkout ? ((await import(resolve(before, 'src', 'engine', 'trace', 'runner.ts'))) as { TracerPool: Pools }).TracerPool : TracerPool,
    now: TracerPool,
  };
  const trees = { before: checkout ? join(before, 'python-tracer') : before, now: join(__dirname, '..', 'python-tracer') };
  const ms: Record<keyof typeof trees, number[]> = { before: [], now: [] };
  const cpu: Record<keyof typeof trees, number[]> = { before: [], now: [] };
  await cold(pools.now, python, trees.now, jobs); // the file cache and the engines' code, both sides
  await cold(pools.before, python, trees.before, jobs);
  for (let i = 0; i < Number(rounds); i++) {
    for (const k of i % 2 ? (['before', 'now'] as const) : (['now', 'before'] as const)) {
      const [wall, used] = await cold(pools[k], python, trees[k], jobs);
      ms[k].push(wall);
      cpu[k].push(used);
    }
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1] ?? Number.NaN;
  console.log(`cold pool of 2, 800 CRUXEval jobs, ${rounds} interleaved rounds (${python}):`);
  for (const k of ['before', 'now'] as const) {
    console.log(`  ${k.padEnd(6)} ${median(ms[k]).toFixed(0)} ms  [${ms[k].map((x) => x.toFixed(0)).join(' ')}]  ${trees[k]}`);
    console.log(`         CPU of every process ${median(cpu[k]).toFixed(0)} ms  [${cpu[k].map((x) => x.toFixed(0)).join(' ')}]`);
  }
  console.log(`  now / before: wall ${(median(ms.now) / median(ms.before)).toFixed(3)}, CPU ${(median(cpu.now) / median(cpu.before)).toFixed(3)}`);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exitCode = 1;
});
