// Harvest benchmark: CPython's pure-Python standard-library modules driven by
// their own unittest suites, at two project sizes, so the growth of cost with
// size is visible. Prints samples/s and seconds per stage; writes
// bench/results/harvest.json. Run: npm run bench:harvest [-- --quick]
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
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-bench-'));
  for (const m of modules) {
    fs.copyFileSync(path.join(stdlib, `${m}.py`), path.join(project, `${m}.py`));
    fs.copyFileSync(path.join(stdlib, 'test', `test_${m}.py`), path.join(project, `test_${m}.py`));
  }
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

async function run(): Promise<void> {
  const python = resolvePython(undefined, process.env);
  const stdlib = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' }).trim();
  const version = execFileSync(python, ['-c', 'import sys; print(sys.version.split()[0])'], { encoding: 'utf8' }).trim();
  const quick = process.argv.includes('--quick');
  const extra = quick ? ['--per-function', '4'] : [];
  console.log(`harvest benchmark: Python ${version} stdlib (${stdlib}), ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}${quick ? ', --quick' : ''}`);
  const results: Record<string, unknown>[] = [];
  for (const [size, modules] of Object.entries(SIZES)) {
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
  fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, 'results', 'harvest.json'), JSON.stringify({ python: version, results }, null, 2) + '\n');
}

run().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
