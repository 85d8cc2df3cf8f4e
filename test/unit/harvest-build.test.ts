// How captured calls become standalone samples, through the real CLI on the
// fixture projects of test/fixtures/harvest/ (one per bug class): no false
// drops, no answer in the prompt. Every stored sample re-runs with plain
// `python -I` to its recorded result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { execFileSync } from 'node:child_process';
import { main } from '../../src/cli/main';
import { readStore } from '../../src/engine/dataset/store';
import { resolvePython } from '../../src/engine/python';
import { samplesThatDoNotReproduce } from '../support/standalone-rerun';
import { buildReport, renderReport, type HarvestReport } from '../../src/engine/harvest/report';
import { entryFunction } from '../../src/engine/questions/generate';

const python = resolvePython(undefined, process.env);
const FIXTURES = path.join(__dirname, '..', 'fixtures', 'harvest');

async function harvestFixture(name: string, inspect?: (out: string) => void) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `execverify-${name}-`));
  const project = path.join(tmp, name);
  fs.cpSync(path.join(FIXTURES, name), project, { recursive: true });
  const out = path.join(tmp, 'out');
  let stdout = '';
  let stderr = '';
  const code = await main(['harvest', project, '--out', out, '--no-answers', '--json'], {
    stdout: new Writable({ write: (c, _e, cb) => ((stdout += String(c)), cb()) }),
    stderr: new Writable({ write: (c, _e, cb) => ((stderr += String(c)), cb()) }),
    env: process.env,
    cwd: process.cwd(),
    signal: new AbortController().signal,
  });
  assert.equal(code, 0, stderr);
  const report = JSON.parse(stdout) as HarvestReport;
  const records = readStore(out).items;
  const drops = fs
    .readFileSync(path.join(out, 'drops.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { reason: string; function: string });
  const built = fs
    .readFileSync(path.join(out, 'work', 'built.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { kind: string; reason?: string; function: string });
  try {
    inspect?.(out);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  assert.deepEqual(samplesThatDoNotReproduce(python, records), [], `${name}: every stored sample re-runs standalone`);
  const builtFunctions = [...new Set(built.filter((b) => b.kind === 'sample').map((b) => b.function))].sort();
  return { report, records, drops, builtFunctions, buildDrops: built.filter((b) => b.kind === 'drop') };
}

test('the same standard-library import in two modules is no name conflict: all three entry points are built', async () => {
  const { records, builtFunctions, buildDrops } = await harvestFixture('stdlib-conflict');
  assert.deepEqual(buildDrops, []);
  assert.deepEqual(
    builtFunctions.filter((f) => ['words', 'frequencies', 'most_common'].includes(f)),
    ['frequencies', 'most_common', 'words'],
  );
  const sample = records.find((r) => r.provenance.function === 'most_common')!;
  assert.equal(sample.code.split('import re\n').length - 1, 1, 'one `import re`, not one per module');
});

test('the branch of a try/except ImportError that runs is kept', async () => {
  const { records, builtFunctions, buildDrops } = await harvestFixture('import-fallback');
  assert.deepEqual(buildDrops, []);
  assert.deepEqual(
    builtFunctions.filter((f) => ['encode', 'side', 'digest'].includes(f)),
    ['digest', 'encode', 'side'],
  );
  const digest = records.find((r) => r.provenance.function === 'digest')!;
  assert.match(digest.code, /def checksum\(data\):/, 'the fallback definition that ran');
});

test('a src layout resolves absolute self-imports; what it cannot cut out says exactly why', async () => {
  const { records, builtFunctions, buildDrops } = await harvestFixture('src-layout');
  assert.ok(builtFunctions.includes('side_of'), builtFunctions.join(', '));
  const side = records.find((r) => r.provenance.function === 'side_of');
  if (side) {
    assert.equal(side.provenance.file, path.join('src', 'shapes', 'geometry.py'));
    assert.match(side.code, /def clamp\(value, low, high\):/);
  }
  assert.deepEqual([...new Set(buildDrops.map((d) => d.reason))].sort(), ['local_import', 'module_object_import']);
});

test('doctest examples and comments stating a result never reach the prompt', async () => {
  const { records, buildDrops } = await harvestFixture('doctest-leak');
  assert.ok(records.length >= 4);
  for (const r of records) {
    assert.doesNotMatch(r.code, />>>/);
    assert.doesNotMatch(r.prompt.map((m) => m.content).join('\n'), />>>/);
    const flat = r.code.replace(/\s+/g, '');
    const call = r.entry.replace(/\s+/g, '');
    assert.ok(!flat.includes(call), `${r.entry} appears in its own code`);
  }
  const gcd = records.find((r) => r.provenance.function === 'gcd')!;
  assert.match(gcd.code, /Uses Euclid's algorithm/, 'the rest of the docstring stays');
  assert.deepEqual(
    buildDrops.map((d) => d.reason),
    ['answer_in_code'],
    'mean([1, 2, 3]) is stated in its docstring',
  );
});

test('a project module named like a standard one (clock/time.py) does not shadow it in the tracer', async () => {
  const { drops, builtFunctions, buildDrops } = await harvestFixture('stdlib-name');
  assert.deepEqual(buildDrops, [], 'the build keeps them');
  assert.deepEqual(builtFunctions, ['duration', 'epoch_year', 'hhmm']);
  assert.deepEqual(
    drops.filter((d) => d.reason.startsWith('trace_')),
    [],
  );
});

test('generator functions are captured to their end and stored as list(f(...)) samples', async () => {
  const { records, report } = await harvestFixture('generators');
  const entries = records.map((r) => r.entry).sort();
  for (const e of ['list(chunks([1, 2, 3, 4, 5], 2))', 'list(countdown(3))', 'list(running_total(range(1, 5)))']) {
    assert.ok(entries.includes(e), `${e} in ${entries.join(', ')}`);
  }
  const countdown = records.find((r) => r.entry === 'list(countdown(3))')!;
  assert.deepEqual(countdown.result, { repr: '[3, 2, 1]', type: 'list' });
  assert.equal(report.drops.capture?.generator, undefined, 'no generator function is dropped as such');
});

test('dates, money, enums, records, callables, iterators, ranges, bytes and complex arguments are described, not dropped', async () => {
  const { records, report } = await harvestFixture('values');
  const functions = new Set(records.map((r) => r.provenance.function));
  for (const f of ['due', 'weekday', 'ends', 'total', 'escalate', 'share', 'apply', 'take', 'span', 'rotate', 'checksum']) {
    assert.ok(functions.has(f), `${f} stored (${[...functions].sort().join(', ')})`);
  }
  const entries = records.map((r) => r.entry);
  assert.ok(entries.includes('due(datetime.date(2024, 2, 27), 3)'), entries.join('\n'));
  assert.ok(
    entries.some((e) => /^escalate\(Priority\.[A-Z]+\)$/.test(e)),
    entries.join('\n'),
  );
  assert.equal(report.drops.capture?.args_not_literal, undefined);
});

test('the report shows the capture summary: modules not collected and the first lines of each error', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-report-'));
  fs.writeFileSync(path.join(out, 'samples.jsonl'), '');
  try {
    const report = buildReport({
      project: { name: 'p', root: out, repository: null, commit: null, license: null, modules: 1, testFiles: 2 },
      out,
      capture: {
        kind: 'summary',
        calls: 0,
        drops: {},
        runner: 'pytest',
        testsRun: 3,
        testFailures: 0,
        collectionErrors: 1,
        errors: [{ where: 'tests/test_b.py', lines: ["ModuleNotFoundError: No module named 'yaml'"] }],
      },
      buildDrops: [],
      builtSamples: 0,
      shardSkipped: 0,
      shard: null,
      timings: [],
      totalSeconds: 1,
      stoppedEarly: false,
      scorer: null,
    });
    assert.equal(report.tests.collectionErrors, 1);
    assert.deepEqual(report.tests.errors, [{ where: 'tests/test_b.py', lines: ["ModuleNotFoundError: No module named 'yaml'"] }]);
    const md = renderReport(report);
    assert.match(md, /test modules not collected: 1/);
    assert.match(md, /`tests\/test_b.py`: ModuleNotFoundError: No module named 'yaml'/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('the entry frame of a method or generator sample is the function the sample is about', () => {
  const call = (expr: string) => entryFunction({ entry: { kind: 'call', expr } });
  assert.equal(call('f([1, 2], 3)'), 'f');
  assert.equal(call('list(countdown(3))'), 'countdown');
  assert.equal(call("Stack([1, ')(']).push(3)"), 'push');
  assert.equal(call('Circle(radius=2).area(digits=1)'), 'area');
  assert.equal(entryFunction({ entry: { kind: 'function', target: 'pkg.mod:g', args: '' } }), 'g');
});

test('methods: Class(args).method(args) from fresh instances, the class cut out, never a changed instance', async () => {
  let checked = '';
  const { records, report, drops } = await harvestFixture('methods', (out) => {
    // check:samples re-runs every method sample, under its own seed and three more.
    checked = execFileSync(python, ['-m', 'execverify.check_samples', out], {
      env: { ...process.env, PYTHONPATH: path.join(__dirname, '..', '..', 'python-tracer') },
      encoding: 'utf8',
    });
  });
  const n = records.length;
  assert.match(checked, new RegExp(`${n} samples, ${n} re-run equal, ${n} stable under 3 hash seeds`));
  const byEntry = new Map(records.map((r) => [r.entry, r]));
  const entries = [...byEntry.keys()].sort();
  for (const e of [
    'Counter(5).bump(1)',
    "Item(name='pen', qty=3).total(2)",
    "Unit('km', 1000).convert(1.5)",
    "Child('a', '!').label(2)",
    "Base('x').label(1)",
    'Stack([1, 2]).push(3)',
  ]) {
    assert.ok(byEntry.has(e), `${e} in ${entries.join(', ')}`);
  }
  // The instances the tests changed, and a second call, are not samples.
  assert.equal(
    records.filter((r) => /^(Counter\(1\)|Stack\(\[1\]\))/.test(r.entry) || r.result.repr === '7' || r.result.repr === '12').length,
    0,
    entries.join(', '),
  );
  assert.equal(report.drops.capture?.instance_changed, 2);
  // A dataclass changed after construction is described by its fields at the call
  // (one-line `total`: its second sample waits behind the first as trivial).
  assert.ok(
    drops.some((d) => d.function === 'Item.total' && d.reason === 'trivial_cap'),
    JSON.stringify(drops.filter((d) => d.function === 'Item.total')),
  );
  const unit = byEntry.get("Unit('km', 1000).convert(1.5)")!;
  assert.equal(unit.provenance.function, 'Unit.convert');
  assert.match(unit.code, /class Registry\(type\):/, 'the metaclass comes along');
  assert.doesNotMatch(unit.code, /class Counter/);
  const child = byEntry.get("Child('a', '!').label(2)")!;
  assert.match(child.code, /class Base:[\s\S]*class Child\(Base\):/, 'the base class comes first');
  // Questions are about the method's own frame: its lines, never `self` or a class.
  for (const r of records) {
    for (const q of r.questions) {
      if (q.kind === 'state') assert.notEqual(q.variable, 'self', `${r.entry}: ${JSON.stringify(q)}`);
    }
  }
  assert.equal(report.drops.capture?.method_or_nested, undefined);
  // The report counts functions and methods: defined, called by the tests, stored.
  const fm = report.functionsAndMethods!;
  assert.deepEqual(fm.defined, { functions: 0, methods: 16 });
  assert.equal(fm.called.functions, 0);
  assert.ok(fm.called.methods >= 15 && fm.called.methods <= 16, JSON.stringify(fm.called));
  assert.deepEqual(fm.stored, { functions: 0, methods: new Set(records.map((r) => r.provenance.function)).size });
  assert.ok(fm.stored.methods >= 9, JSON.stringify(fm.stored));
});
