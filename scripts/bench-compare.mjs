// `npm run bench:compare -- [BASE [AFTER]] [--rounds N] [--only tracer,judge,…] [--working-tree] [--keep]`:
// every benchmark on BASE (default 1ca461b, the commit before issues 15 and 16)
// and on AFTER (default HEAD; --working-tree: this checkout as it is, others'
// uncommitted changes included), alternately in one run, so a change in the
// machine's load touches both sides alike. Writes a table (benchmark, metric, before,
// after, ratio, noise, within noise) to stdout as markdown and to
// bench/results/compare-<base>-<time>.json.
//
// Noise: each side runs each benchmark --rounds times (default 2; the order
// alternates each round: BASE first, then AFTER first). A metric's noise is
// the larger of the two sides' spreads, (max − min) / median; a difference is
// within noise when |after / before − 1| ≤ that spread. A count (events,
// samples, prompts) has no spread: it must be equal.
//
// Each side runs its own benchmark scripts from a git worktree made under the
// temporary directory (removed at the end unless --keep). Its node_modules is
// the working tree's when every package its lock file names is at the same
// version in the tree's lock (packages the tree dropped must be dev-only: no
// benchmark imports them), so both sides run on the same libraries; otherwise
// `npm ci` installs its own. ../shared (the CRUXEval data) is linked next to
// the worktrees as it is next to this repository.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const positional = argv.filter((a, i) => !a.startsWith('--') && !['--rounds', '--only'].includes(argv[i - 1] ?? ''));
const BASE = positional[0] ?? '1ca461b';
const AFTER = positional[1] ?? 'HEAD';
const WORKING_TREE = argv.includes('--working-tree');
const ROUNDS = Math.max(1, Number(option('rounds', '2')));
const ONLY = option('only', '').split(',').filter(Boolean);

// One workload per benchmark, the same on both sides: the knobs each script
// had at BASE already (rounds, requests, --quick), and --trace to replay one
// recorded trace. A metric is [name, regex on the output, kind]: 'time' or
// 'rate' vary with the machine, 'count' must be equal.
const BENCHMARKS = [
  {
    name: 'tracer',
    script: 'bench:tracer',
    env: { BENCH_ROUNDS: '1', BENCH_LOOP_N: '200' },
    metrics: [
      ['(a) 800 CRUXEval programs, naive in-process [s]', /naive in-process .*?\s([\d.]+) s /, 'time'],
      ['(a) 800 CRUXEval programs, ours traceMany cold [s]', /ours, pool\.traceMany, cold .*?\s([\d.]+) s /, 'time'],
      ['(a) ratio ours / naive', /ratio ours \/ naive: median ([\d.]+)/, 'time'],
      ['(a) ours, warm pool [s]', /traceMany again on the warm pool \(no start-up\)\s+([\d.]+) s/, 'time'],
      ['(a) return values equal to naive', /return values equal to the naive run\s+(\d+) \//, 'count'],
      ['(b) loop, events', /\(b\) loop-heavy program: (\d+) events/, 'count'],
      ['(b) loop, naive [s]', /^\s+naive\s+([\d.]+) s/m, 'time'],
      ['(b) loop, ours traced in worker [s]', /ours, traced \(in worker\)\s+([\d.]+) s/, 'time'],
      ['(b) loop, ours end to end [s]', /ours, end to end\s+([\d.]+) s/, 'time'],
      ['(c) decodeTrace 1M events, build [ms]', /events: build (\d+) ms/, 'time'],
      ['(c) decodeTrace random access p99 [ms]', /random locals\(\)\+stack\(\) p50 [\d.]+ ms, p99 ([\d.]+) ms/, 'time'],
    ],
  },
  {
    name: 'judge',
    script: 'bench:judge',
    metrics: [
      ['state answers [/s]', /^state answers \([\d,]+\)\s+([\d,]+)\/s/m, 'rate'],
      ['state answers per worker CPU second [/s]', /per CPU second of the worker: judging\s+([\d,]+)\/s/, 'rate'],
      ['sandboxed expression answers [/s]', /^sandboxed expression answers \(\d+\)\s+([\d,]+)\/s/m, 'rate'],
      ['one expression per request [/s]', /one expression per request, 1 fork each\)\s+([\d,]+)\/s/, 'rate'],
      ['state answers correct', /correct: state (\d+)\//, 'count'],
    ],
  },
  {
    name: 'model',
    script: 'bench:model',
    args: ['--requests', '300', '--rounds', '3'],
    metrics: [
      ...[1, 16, 64].flatMap((c) => [
        [`client req/s, concurrency ${c}`, new RegExp(`^\\s+${c}\\s+\\d+\\s+(\\d+)\\s`, 'm'), 'rate'],
        [`client CPU µs/req, concurrency ${c}`, new RegExp(`^\\s+${c}\\s+\\d+\\s+\\d+\\s+[-\\d.]+%\\s+\\d+\\s+(\\d+)\\s`, 'm'), 'time'],
      ]),
      // The prompts asked about the first CRUXEval calls: counts, no timing.
      ...['execverify', 'execverify-authors', 'cruxeval-output'].flatMap((t) => [
        [`${t}: prompts/call`, new RegExp(`^${t}\\s+([\\d.]+)\\s`, 'm'), 'count'],
        [`${t}: questions/call`, new RegExp(`^${t}\\s+[\\d.]+\\s+([\\d.]+)\\s`, 'm'), 'count'],
        [`${t}: tokens/call`, new RegExp(`^${t}\\s+[\\d.]+\\s+[\\d.]+\\s+(\\d+)\\s`, 'm'), 'count'],
      ]),
    ],
  },
  {
    name: 'editor',
    script: 'bench:editor',
    metrics: [
      ['CodeLens, unchanged document p50 [ms]', /CodeLens \(\d+ lenses\), unchanged document:\s+p50 ([\d.]+) ms/, 'time'],
      ['CodeLens after an edit p50 [ms]', /CodeLens after an edit \(full rescan\):\s+p50 ([\d.]+) ms/, 'time'],
      ['inline results p50 [ms]', /Inline results \(\d+ inlay hints, full file\):\s+p50 ([\d.]+) ms/, 'time'],
      ['CodeLens + inline results p95 [ms]', /CodeLens \+ inline results together:\s+p50 [\d.]+ ms · p95 ([\d.]+) ms/, 'time'],
      ['panel data over stdio p50 [ms]', /Panel data for a \d+-step run .*?: p50 ([\d.]+) ms/, 'time'],
      ['panel model, one scroll frame p50 [ms]', /one scroll frame \(virtual window\):\s+p50 ([\d.]+) ms/, 'time'],
    ],
  },
  {
    name: 'adapter',
    script: 'bench:adapter',
    // Round one records the 1,000,000-event trace (--save); later rounds replay it (--trace).
    trace: true,
    metrics: [
      ['index + first stop [ms]', /index \+ first stop: (\d+) ms/, 'time'],
      ...['next', 'stepBack', 'stackTrace', 'variables', 'evaluate'].map((r) => [
        `${r} wall p50 [ms]`,
        new RegExp(`^\\s+${r}\\s+n=\\s*\\d+\\s+wall p50\\s+([\\d.]+) ms`, 'm'),
        'time',
      ]),
      ['worst cpu p99 [ms]', /worst cpu p99: ([\d.]+) ms/, 'time'],
      ['whole-trace conditional continue [ms]', /never-true condition over the whole trace \(\d+ evaluations\): (\d+) ms/, 'time'],
    ],
  },
  {
    name: 'harvest',
    script: 'bench:harvest',
    args: ['--quick'],
    // The tree's harvest bench also measures capture overhead (new since BASE):
    // an empty interpreter list leaves it out, so both sides run the same harvests.
    env: { EXECVERIFY_BENCH_PYTHONS: ',' },
    metrics: ['small', 'large'].flatMap((size) => [
      [`${size}: samples`, new RegExp(`^${size}\\s.*?(\\d+) samples\\s`, 'm'), 'count'],
      [`${size}: samples/s`, new RegExp(`^${size}\\s.*?\\| ([\\d.]+) samples/s`, 'm'), 'rate'],
      [`${size}: total [s]`, new RegExp(`^${size}\\s.*?total ([\\d.]+)s`, 'm'), 'time'],
    ]),
  },
].filter((b) => ONLY.length === 0 || ONLY.includes(b.name));

const git = (...args) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();

/** A worktree of `sha` in `parent` (beside its link to ../shared), with node_modules reused or installed. */
function makeTree(parent, name, sha) {
  const tree = path.join(parent, name);
  git('worktree', 'add', '--detach', tree, sha);
  const lock = (ref) => JSON.parse(git('show', `${ref}:package-lock.json`)).packages;
  const mine = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages;
  const theirs = lock(sha);
  const differ = Object.entries(theirs).filter(([k, v]) => k && (mine[k] ? mine[k].version !== v.version : !v.dev));
  let install;
  if (differ.length === 0 && fs.existsSync(path.join(root, 'node_modules'))) {
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
    const dropped = Object.keys(theirs).filter((k) => k && !mine[k]).length;
    install = `node_modules of the working tree (${sha}'s lock names no package at another version${dropped ? `; the ${dropped} it has that the tree dropped are dev-only` : ''})`;
  } else {
    const t0 = Date.now();
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: tree, stdio: 'inherit' });
    install = `npm ci in the worktree (${((Date.now() - t0) / 1000).toFixed(0)} s; ${differ.length} packages differ, e.g. ${differ[0][0]})`;
  }
  return { tree, install };
}

/** Runs one benchmark in `cwd`, echoing its output; resolves to the output. */
function runBenchmark(bench, cwd, extra) {
  return new Promise((resolve, reject) => {
    const args = ['run', '-s', bench.script, '--', ...(bench.args ?? []), ...extra];
    const child = spawn('npm', args, { cwd, env: { ...process.env, ...bench.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const take = (d) => {
      out += d;
      process.stdout.write(d);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${bench.name} exited ${code} in ${cwd}`))));
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const spread = (xs) => (xs.length < 2 || median(xs) === 0 ? 0 : (Math.max(...xs) - Math.min(...xs)) / Math.abs(median(xs)));
const fmt = (x) => (x === undefined ? '—' : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));

async function main() {
  const sha = git('rev-parse', '--short', `${BASE}^{commit}`);
  const head = git('rev-parse', '--short', `${AFTER}^{commit}`);
  // The working tree may hold others' unfinished changes: the after side is a commit unless asked.
  const dirty = WORKING_TREE && git('status', '--porcelain', '--untracked-files=no') !== '';
  const label = WORKING_TREE ? `the working tree (HEAD ${head}${dirty ? ' + uncommitted changes' : ''})` : head;
  const started = Date.now();
  console.log(`bench:compare: BASE ${sha} vs ${label}, ${ROUNDS} rounds`);
  // The benchmarks write their own results (bench/results/harvest.json): the ones there before are put back.
  const resultsDir = path.join(root, 'bench', 'results');
  const kept = new Map();
  for (const f of fs.existsSync(resultsDir) ? fs.readdirSync(resultsDir) : []) kept.set(f, fs.readFileSync(path.join(resultsDir, f)));
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-bench-compare-'));
  const shared = path.resolve(root, '..', 'shared');
  if (fs.existsSync(shared)) fs.symlinkSync(shared, path.join(parent, 'shared'));
  const trees = [];
  const cleanUp = () => {
    for (const [f, data] of kept) fs.writeFileSync(path.join(resultsDir, f), data);
    if (argv.includes('--keep')) return;
    for (const t of trees) execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', t], { stdio: 'ignore' });
    fs.rmSync(parent, { recursive: true, force: true });
  };
  let base, after;
  try {
    base = makeTree(parent, 'base', sha);
    trees.push(base.tree);
    after = WORKING_TREE ? { tree: root, install: 'the working tree' } : makeTree(parent, 'after', head);
    if (!WORKING_TREE) trees.push(after.tree);
  } catch (err) {
    cleanUp();
    throw err;
  }
  // Ctrl-C stops the benchmark (same process group) and removes the worktree.
  process.once('SIGINT', () => {
    cleanUp();
    process.exit(130);
  });
  console.log(`install: BASE ${base.install}; after: ${after.install}`);
  const failures = [];
  const sides = { before: base.tree, after: after.tree };
  const values = {}; // bench -> metric -> side -> number[]
  const missing = {}; // bench -> side -> metric names the output lacked
  const seconds = {}; // bench -> side -> seconds per run
  const traces = {};
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const bench of BENCHMARKS) {
        const order = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
        for (const side of order) {
          const cwd = sides[side];
          const extra = [];
          if (bench.trace) {
            const file = path.join(parent, `${bench.name}-${side}.json`);
            extra.push(traces[side] ? `--trace=${file}` : `--save=${file}`);
            traces[side] = file;
          }
          console.log(`\n==== round ${round + 1}/${ROUNDS}: ${bench.name} on ${side === 'before' ? `BASE ${sha}` : label}`);
          const t0 = Date.now();
          let out;
          try {
            out = await runBenchmark(bench, cwd, extra);
          } catch (err) {
            // One failed run is a note in the table, not the end of the comparison.
            failures.push(`round ${round + 1}: ${err.message}`);
            if (bench.trace && !fs.existsSync(traces[side])) delete traces[side];
            continue;
          }
          ((seconds[bench.name] ??= {})[side] ??= []).push((Date.now() - t0) / 1000);
          for (const [metric, re] of bench.metrics) {
            const m = re.exec(out);
            if (m) (((values[bench.name] ??= {})[metric] ??= {})[side] ??= []).push(Number(m[1].replace(/,/g, '')));
            else ((missing[bench.name] ??= {})[side] ??= new Set()).add(metric);
          }
        }
      }
    }
  } finally {
    cleanUp();
  }

  const rows = [];
  for (const bench of BENCHMARKS) {
    for (const [metric, , kind] of bench.metrics) {
      const v = values[bench.name]?.[metric] ?? {};
      const before = v.before && median(v.before);
      const after = v.after && median(v.after);
      const noise = kind === 'count' ? 0 : Math.max(spread(v.before ?? []), spread(v.after ?? []));
      const ratio = before !== undefined && after !== undefined && before !== 0 ? after / before : undefined;
      const within = ratio === undefined ? undefined : kind === 'count' ? before === after : Math.abs(ratio - 1) <= noise;
      rows.push({
        benchmark: bench.name,
        metric,
        kind,
        before: v.before ?? [],
        after: v.after ?? [],
        medianBefore: before,
        medianAfter: after,
        ratio,
        noise,
        within,
      });
    }
  }
  const lines = [
    `| benchmark | metric | before (${sha}) | after (${head}${dirty ? '+' : ''}) | ratio | noise | within noise |`,
    '|---|---|---:|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.benchmark} | ${r.metric} | ${fmt(r.medianBefore)} | ${fmt(r.medianAfter)} | ${r.ratio === undefined ? '—' : r.ratio.toFixed(2)} | ` +
        `${r.kind === 'count' ? 'count' : `±${(r.noise * 100).toFixed(0)}%`} | ${r.within !== undefined ? (r.within ? 'yes' : '**no**') : r.after.length ? `not at ${sha}` : 'not measured'} |`,
    ),
  ];
  const notes = [...failures];
  for (const [bench, bySide] of Object.entries(missing)) {
    for (const [side, names] of Object.entries(bySide)) notes.push(`${bench} on ${side === 'before' ? sha : head} printed no ${[...names].join('; ')}`);
  }
  const total = (Date.now() - started) / 1000;
  console.log(
    `\n## bench:compare ${sha} → ${WORKING_TREE ? 'working tree ' : ''}${head}${dirty ? '+' : ''}, ${ROUNDS} rounds, ${(total / 60).toFixed(1)} min, load average now ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${os.availableParallelism()} cores\n`,
  );
  console.log(lines.join('\n'));
  for (const n of notes) console.log(`\nnote: ${n}`);
  console.log(
    `\nseconds per run (median, before / after): ${Object.entries(seconds)
      .map(([b, s]) => `${b} ${fmt(median(s.before ?? [0]))} / ${fmt(median(s.after ?? [0]))}`)
      .join(', ')}`,
  );
  const dir = path.join(root, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `compare-${sha}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  const record = {
    base: sha,
    after: head,
    workingTree: WORKING_TREE,
    dirty,
    rounds: ROUNDS,
    install: { base: base.install, after: after.install },
    minutes: total / 60,
    loadavg: os.loadavg(),
    cores: os.availableParallelism(),
    seconds,
    rows,
    notes,
  };
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(record, null, 2) + '\n');
  fs.renameSync(`${file}.tmp`, file);
  console.log(`written: ${path.relative(root, file)}`);
}

main().catch((err) => {
  console.error(`bench:compare: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
