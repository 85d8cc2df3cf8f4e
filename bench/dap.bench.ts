// `npm run bench:dap`: the DAP tracer through debugpy beside the in-process
// tracer, in one run, on the same program — and the parity table of
// docs/trace-format.md over the fixture programs.
//
// (a) steps/s on test/fixtures/programs/dbg_loop.py `accumulate(N)`: each
//     tracer end to end (start, record, validate), and debugpy's marginal
//     rate — (steps(N2) - steps(N1)) / (time(N2) - time(N1)) — which leaves
//     out its start-up (adapter, launcher, debuggee).
// (b) the parity table: every program of test/fixtures/programs/dap-parity.json
//     recorded by both, compared by src/engine/dap/parity.ts.
// (c) steps/s of the C tracer through lldb's DAP server on
//     test/fixtures/programs/c/echo.c (sums the numbers on its stdin: 10, then
//     100), end to end (gcc included) and marginal, in the same run as (a).
//
// Environment: EXECVERIFY_PYTHON picks the interpreter (default .venv/bin/python,
// which has debugpy); BENCH_PARTS (default "abc").
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { debugpyInfo, traceViaDebugpy } from '../src/engine/dap/debugpy-tracer';
import { findLldbDap, traceViaLldb } from '../src/engine/dap/lldb-tracer';
import { compareTraces } from '../src/engine/dap/parity';
import { TracerPool } from '../src/engine/trace/runner';
import type { Trace } from '../src/engine/trace/schema';

const REPO = path.resolve(__dirname, '..');
const PROGRAMS = path.join(REPO, 'test/fixtures/programs');
const venv = path.join(REPO, '.venv/bin/python');
const python = process.env.EXECVERIFY_PYTHON?.trim() || (existsSync(venv) ? venv : 'python3');
const env = { ...process.env, PYTHONHASHSEED: '0' };
const parts = process.env.BENCH_PARTS ?? 'abc';
const limits = { wallTimeMs: 600_000 };

async function timed(record: () => Promise<Trace>): Promise<{ trace: Trace; ms: number }> {
  const t0 = performance.now();
  const trace = await record();
  return { trace, ms: performance.now() - t0 };
}

async function main(): Promise<void> {
  const info = debugpyInfo(python, env);
  console.log(`bench:dap — Python ${info.version}, debugpy ${info.debugpy}, ${availableParallelism()} CPUs, load ${loadavg()[0]!.toFixed(2)}`);
  const pool = new TracerPool({ python, size: 1, env });
  try {
    if (parts.includes('a')) {
      const file = path.join(PROGRAMS, 'dbg_loop.py');
      const inProcess = (expr: string) => timed(() => pool.trace({ path: file, entry: { kind: 'call', expr }, limits }));
      const dap = (expr: string) => timed(() => traceViaDebugpy({ path: file, expr, python, env, limits }));
      await inProcess('accumulate(1)'); // the worker starts
      const small = 'accumulate(10)';
      const large = 'accumulate(40)';
      const ip = await inProcess(large);
      const d1 = await dap(small);
      const d2 = await dap(large);
      const rate = (t: { trace: Trace; ms: number }) => (t.trace.steps.length / t.ms) * 1000;
      const marginal = ((d2.trace.steps.length - d1.trace.steps.length) / (d2.ms - d1.ms)) * 1000;
      console.log('\n(a) steps/s on dbg_loop.py, end to end');
      console.log('| tracer | entry | steps | ms | steps/s |');
      console.log('|---|---|---:|---:|---:|');
      console.log(`| in-process (${ip.trace.python!.backend}) | ${large} | ${ip.trace.steps.length} | ${ip.ms.toFixed(0)} | ${rate(ip).toFixed(0)} |`);
      console.log(`| debugpy over DAP | ${small} | ${d1.trace.steps.length} | ${d1.ms.toFixed(0)} | ${rate(d1).toFixed(1)} |`);
      console.log(`| debugpy over DAP | ${large} | ${d2.trace.steps.length} | ${d2.ms.toFixed(0)} | ${rate(d2).toFixed(1)} |`);
      console.log(
        `debugpy marginal rate (start-up left out): ${marginal.toFixed(1)} steps/s; in-process / debugpy (end to end, ${large}): ${(rate(ip) / rate(d2)).toFixed(0)}×`,
      );
    }
    if (parts.includes('c')) {
      const file = path.join(PROGRAMS, 'c/echo.c');
      const numbers = (n: number) => Array.from({ length: n }, (_, k) => String(k)).join(' ') + '\n';
      const lldb = (n: number) => timed(() => traceViaLldb({ path: file, env, stdin: numbers(n), limits }));
      const l1 = await lldb(10);
      const l2 = await lldb(100);
      const rate = (t: { trace: Trace; ms: number }) => (t.trace.steps.length / t.ms) * 1000;
      console.log(`\n(c) steps/s of the C tracer through ${path.basename(findLldbDap(env))} on c/echo.c, end to end (gcc -g -O0 included)`);
      console.log('| tracer | stdin | steps | ms | steps/s |');
      console.log('|---|---|---:|---:|---:|');
      for (const [n, t] of [
        [10, l1],
        [100, l2],
      ] as const)
        console.log(`| lldb over DAP | ${n} numbers | ${t.trace.steps.length} | ${t.ms.toFixed(0)} | ${rate(t).toFixed(1)} |`);
      console.log(
        `lldb marginal rate (start-up and gcc left out): ${(((l2.trace.steps.length - l1.trace.steps.length) / (l2.ms - l1.ms)) * 1000).toFixed(1)} steps/s`,
      );
    }
    if (parts.includes('b')) {
      const programs = JSON.parse(readFileSync(path.join(PROGRAMS, 'dap-parity.json'), 'utf8')) as Array<{ file: string; entry: string }>;
      console.log('\n(b) parity: in-process tracer × DAP tracer through debugpy');
      console.log('| program | entry | line events (in-process / debugpy) | line sequence | values compared | equal | not read by debugpy |');
      console.log('|---|---|---|---|---:|---:|---:|');
      for (const { file, entry } of programs) {
        const full = path.join(PROGRAMS, file);
        const a = await pool.trace({ path: full, entry: { kind: 'call', expr: entry }, limits });
        const b = await traceViaDebugpy({ path: full, expr: entry, python, env, limits });
        const p = compareTraces(a, b);
        console.log(
          `| ${file} | \`${entry}\` | ${p.lines[0]} / ${p.lines[1]} | ${p.linesEqual ? 'equal' : 'DIFFERENT'} | ${p.values} | ${p.values - p.differ} | ${p.unread} |`,
        );
        for (const e of p.examples) console.log(`    ${e}`);
      }
    }
  } finally {
    await pool.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
