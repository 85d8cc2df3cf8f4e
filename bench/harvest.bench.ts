// Harvest benchmark: CPython's pure-Python standard-library modules driven by
// their own unittest suites, at two project sizes, so the growth of cost with
// size is visible. Prints samples/s and seconds per stage, then the capture's
// overhead against the plain test run of the large suite (612 tests) on
// Python 3.11 and 3.12 in the same run, per capture backend; writes
// bench/results/harvest.json. Run: npm run bench:harvest [-- --quick] [-- --capture-only] [-- --no-settrace]
// (--no-settrace: the comparison backend, 6-10x slower, left out)
// (EXECVERIFY_BENCH_PYTHONS=/path/a,/path/b picks the interpreters).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { main } from '../src/cli/main';
import { resolvePython } from '../src/engine/python';
import type { HarvestReport } from '../src/engine/harvest/report';

const SIZES: Record<string, string[]> = {
  small: ['bisect', 'heapq'],
  large: ['bisect', 'heapq', 'textwrap', 'fractions', 'statistics', 'difflib'],
};

async function harvestModules(python: string, stdlib: string, modules: string[], extra: string[]): Promise<HarvestReport> {
  const project = copyProject(stdlib, modules);
  const out = `${project}-out`;
  let stdout = '';
  let stderr = '';
  const sink = (f: (s: string) => void) => new Writable({ write: (c, _e, cb) => (f(String(c)), cb()) });
  const code = await main(['harvest', project, '--out', out, '--json', ...extra], {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env: { ...process.env, EXECVERIFY_PYTHON: python },
    cwd: process.cwd(),
    signal: new AbortController().signal,
  });
  if (code !== 0) throw new Error(`harvest failed: ${stderr}`);
  fs.rmSync(project, { recursive: true, force: true });
  fs.rmSync(out, { recursive: true, force: true });
  return JSON.parse(stdout) as HarvestReport;
}

function copyProject(stdlib: string, modules: string[]): string {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-bench-'));
  for (const m of modules) {
    fs.copyFileSync(path.join(stdlib, `${m}.py`), path.join(project, `${m}.py`));
    fs.copyFileSync(path.join(stdlib, 'test', `test_${m}.py`), path.join(project, `test_${m}.py`));
  }
  return project;
}

interface CaptureRun {
  backend: string;
  tests: number;
  failures: number;
  calls: number;
  seconds: number;
  cpuSeconds: number;
}

/** One `python -m execverify.harvest capture` of `project` (`--plain`: the same tests, no capture). */
function captureOnce(python: string, project: string, backend: string): CaptureRun {
  const out = path.join(project, 'calls.jsonl');
  const args = ['-m', 'execverify.harvest', 'capture', '--root', project, '--out', out, '--runner', 'unittest'];
  execFileSync(python, [...args, ...(backend === 'plain' ? ['--plain'] : ['--backend', backend])], {
    env: { ...process.env, PYTHONPATH: path.join(__dirname, '..', 'python-tracer') },
    stdio: 'ignore',
  });
  const lines = fs.readFileSync(out, 'utf8').trim().split('\n');
  const s = JSON.parse(lines[lines.length - 1]!) as { testsRun: number; testFailures: number; calls: number; seconds: number; cpuSeconds: number };
  return { backend, tests: s.testsRun, failures: s.testFailures, calls: s.calls, seconds: s.seconds, cpuSeconds: s.cpuSeconds };
}

function benchPythons(): string[] {
  if (process.env.EXECVERIFY_BENCH_PYTHONS) return process.env.EXECVERIFY_BENCH_PYTHONS.split(',').filter(Boolean);
  const listed = execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'pythons.sh')], { encoding: 'utf8' }).split('\n');
  return ['3.11', '3.12'].map((v) => listed.find((p) => p.trim().endsWith(`python${v}`))).filter((p): p is string => !!p);
}

/** Capture overhead: the test run's seconds with each backend over the plain run's, median of `repeats`. */
function captureOverhead(repeats: number): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const python of benchPythons()) {
    const stdlib = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' }).trim();
    const version = execFileSync(python, ['-c', 'import sys; print(sys.version.split()[0])'], { encoding: 'utf8' }).trim();
    const project = copyProject(stdlib, SIZES.large!);
    const backends = [
      'plain',
      ...(version.startsWith('3.1') && Number(version.split('.')[1]) >= 12 ? ['monitoring'] : []),
      'trampoline',
      ...(process.argv.includes('--no-settrace') ? [] : ['settrace']),
    ];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const runs: Record<string, CaptureRun[]> = {};
    // Interleaved, so a change in the machine's load touches every backend alike.
    for (let i = 0; i < repeats; i++) for (const b of backends) (runs[b] ??= []).push(captureOnce(python, project, b));
    // CPU seconds of the test run (the capture process's own): less sensitive to a busy machine than wall time.
    const plain = median(runs.plain!.map((r) => r.cpuSeconds));
    for (const b of backends) {
      const cpuSeconds = median(runs[b]!.map((r) => r.cpuSeconds));
      const seconds = median(runs[b]!.map((r) => r.seconds));
      const first = runs[b]![0]!;
      const overhead = Number((cpuSeconds / plain).toFixed(2));
      const row = { python: version, backend: b, tests: first.tests, failures: first.failures, calls: first.calls, seconds, cpuSeconds, overhead };
      rows.push(row);
      console.log(
        `capture ${version.padEnd(7)} ${b.padEnd(10)} ${String(row.tests).padStart(4)} tests ${String(row.failures).padStart(2)} failing ` +
          `${String(row.calls).padStart(4)} calls  ${cpuSeconds.toFixed(2)} s CPU (${seconds.toFixed(2)} s wall)  ${overhead.toFixed(2)}x the plain run`,
      );
    }
    fs.rmSync(project, { recursive: true, force: true });
  }
  return rows;
}

async function run(): Promise<void> {
  const python = resolvePython(undefined, process.env);
  const stdlib = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' }).trim();
  const version = execFileSync(python, ['-c', 'import sys; print(sys.version.split()[0])'], { encoding: 'utf8' }).trim();
  const quick = process.argv.includes('--quick');
  const extra = quick ? ['--per-function', '4'] : [];
  console.log(
    `harvest benchmark: Python ${version} stdlib (${stdlib}), ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}${quick ? ', --quick' : ''}`,
  );
  const results: Record<string, unknown>[] = [];
  const captureOnly = process.argv.includes('--capture-only');
  for (const [size, modules] of Object.entries(captureOnly ? {} : SIZES)) {
    const report = await harvestModules(python, stdlib, modules, extra);
    const stage = (name: string) => report.timings.find((t) => t.stage === name)?.seconds ?? 0;
    const row = {
      size,
      modules: modules.join(','),
      tests: report.tests.run,
      calls: report.funnel[0]!.count,
      samples: report.samples,
      functions: report.functions,
      totalS: report.totalSeconds,
      samplesPerS: report.samplesPerSecond,
      captureS: stage('capture'),
      buildS: stage('build'),
      samplesS: stage('samples'),
      traceS: stage('samples.trace'),
      questionsS: stage('samples.questions'),
      modelS: stage('samples.model'),
      storeS: stage('samples.store'),
      drops: report.drops,
    };
    results.push(row);
    console.log(
      `${size.padEnd(6)} ${String(modules.length).padStart(2)} modules ${String(row.tests).padStart(5)} tests ` +
        `${String(row.calls).padStart(5)} calls ${String(row.samples).padStart(5)} samples ${String(row.functions).padStart(4)} fns | ` +
        `${row.samplesPerS} samples/s, total ${row.totalS}s = capture ${row.captureS}s + build ${row.buildS}s + per-sample ${row.samplesS}s ` +
        `(trace ${row.traceS}s, questions ${row.questionsS}s, baseline answers+judge ${row.modelS}s, store ${row.storeS}s; summed over ${os.availableParallelism()} workers)`,
    );
  }
  const capture = captureOverhead(quick ? 1 : 3);
  fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, 'results', 'harvest.json'), JSON.stringify({ python: version, results, capture }, null, 2) + '\n');
}

run().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
