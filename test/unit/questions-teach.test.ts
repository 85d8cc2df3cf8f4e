// Questions that teach and truths that hold (issue 22, items 5 and 7), on real
// traces: coverage and Nil from every frame (nested functions, recursion), no
// class-valued state questions, the unchanged-variable share, trivial runs,
// truths confirmed under other hash seeds and a second run, code that reads
// the clock or the machine, local paths, and generation linear in the trace.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TracerPool } from '../../src/engine/trace/runner';
import type { Trace } from '../../src/engine/trace/schema';
import { decodeTrace } from '../../src/engine/trace/decode';
import { confirmIn, generateQuestions, movedQuestions, triviality, type Question } from '../../src/engine/questions';
import { localPathFinder, machineDependence } from '../../src/engine/harvest/determinism';
import { prepareAsk } from '../../src/engine/ask';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { JudgeClient } from '../../src/engine/judge/client';
import { groundTruthString } from '../../src/engine/judge/schema';

/** One pool per hash seed: a worker's seed is fixed when it starts. */
const pools = new Map<number, TracerPool>();
const poolAt = (seed: number): TracerPool => {
  let p = pools.get(seed);
  if (!p) pools.set(seed, (p = new TracerPool({ size: 1, env: { ...process.env, PYTHONHASHSEED: String(seed) } })));
  return p;
};
const traceOf = (source: string, call: string, seed = 0): Promise<Trace> =>
  poolAt(seed).trace({ source, path: 'prog.py', entry: { kind: 'call', expr: call } });

before(() => poolAt(0));
after(() => {
  for (const p of pools.values()) p.close();
});

const ALL = { maxNextLine: 50, maxState: 50, maxCoverage: 50, maxNil: 50 };
const stateQs = (qs: Question[]) => qs.filter((q): q is Extract<Question, { kind: 'state' }> => q.kind === 'state');

const NESTED = `def f(xs):
    def g(x):
        y = x + 1
        return y
    return [g(x) for x in xs]
`;

test('lines of a nested function that ran are covered, and never Nil', async () => {
  const qs = generateQuestions(await traceOf(NESTED, 'f([1, 2])'), ALL);
  const cov = new Map(qs.filter((q) => q.kind === 'coverage').map((q) => [q.line, q.kind === 'coverage' && q.truth.covered]));
  assert.equal(cov.get(3), true, 'y = x + 1 ran in g');
  assert.equal(cov.get(4), true, 'return y ran in g');
  assert.ok(!stateQs(qs).some((q) => 'nil' in q.truth), 'no Nil: every assignment ran in some frame');
});

test('a nested function that never runs: its lines are not covered and its assignment is Nil', async () => {
  const qs = generateQuestions(await traceOf(NESTED, 'f([])'), ALL);
  const cov = new Map(qs.filter((q) => q.kind === 'coverage').map((q) => [q.line, q.kind === 'coverage' && q.truth.covered]));
  assert.equal(cov.get(3), false);
  assert.ok(stateQs(qs).some((q) => q.line === 3 && 'nil' in q.truth));
});

const RECURSIVE = `def fact(n):
    if n <= 1:
        r = 1
        return r
    return n * fact(n - 1)
`;

test('recursion: a line only an inner call ran is covered, and not Nil', async () => {
  const qs = generateQuestions(await traceOf(RECURSIVE, 'fact(3)'), ALL);
  const cov = qs.find((q) => q.kind === 'coverage' && q.line === 3);
  assert.ok(cov && cov.kind === 'coverage' && cov.truth.covered);
  assert.ok(!stateQs(qs).some((q) => q.line === 3 && 'nil' in q.truth));
});

test('no state question about a class, whatever its metaclass (type, ABCMeta: Fraction, EnumType: an Enum class)', async () => {
  const code = `import enum
from fractions import Fraction


class Color(enum.Enum):
    RED = 1


def f(x):
    cls = Fraction
    e = Color
    t = int
    y = x + 1
    return y
`;
  const trace = await traceOf(code, 'f(1)');
  for (const seed of [0, 1, 2, 3]) {
    const asked = stateQs(generateQuestions(trace, { ...ALL, seed })).map((q) => q.var);
    assert.ok(asked.includes('y'));
    for (const v of ['cls', 'e', 't']) assert.ok(!asked.includes(v), `${v} is a class`);
  }
});

const PROGRAMS: [string, string][] = [
  [`def f(xs, k):\n    n = len(xs)\n    out = []\n    for x in xs:\n        out.append(x * k)\n    return out\n`, 'f([1, 2, 3], 2)'],
  [`def g(a, b, c):\n    s = a + b\n    return s * c\n`, 'g(1, 2, 3)'],
  [`def h(text, sep):\n    parts = text.split(sep)\n    first = parts[0]\n    return first.upper()\n`, "h('a,b', ',')"],
  [`def m(d, key, default):\n    if key in d:\n        return d[key]\n    return default\n`, "m({'a': 1}, 'b', 0)"],
];

test('at most 20% of the state questions ask about a variable the line leaves unchanged (configurable)', async () => {
  for (const share of [0.2, 0.5]) {
    let asked = 0;
    let unchanged = 0;
    for (const [code, call] of PROGRAMS) {
      const trace = await traceOf(code, call);
      const d = decodeTrace(trace);
      for (const seed of [0, 1, 2]) {
        const qs = stateQs(generateQuestions(trace, { seed, unchangedShare: share })).filter((q) => !('nil' in q.truth));
        let u = 0;
        for (const q of qs) {
          const frame = d.frames.find((f) => f.id === q.frame)!;
          const runs = frame.steps.filter((i) => d.steps[i]!.event === 'line' && d.steps[i]!.line === q.line);
          const at = runs[q.k - 1]!;
          const before = d.locals(at)[q.var];
          if (before && 'repr' in q.truth && before.repr === q.truth.repr) u++;
        }
        assert.ok(u <= share * Math.max(1, qs.length) + 1e-9, `${call}: ${u} of ${qs.length} unchanged`);
        asked += qs.length;
        unchanged += u;
      }
    }
    assert.ok(unchanged / asked <= share, `share ${share}: ${unchanged}/${asked}`);
  }
});

test('trivial runs: two lines or fewer, or the result is an argument unchanged', async () => {
  assert.equal(triviality(await traceOf('def f(x):\n    return x\n', 'f(3)')), 'few_lines');
  const identity = 'def f(s):\n    t = s.strip()\n    if t == s:\n        return s\n    return t\n';
  assert.equal(triviality(await traceOf(identity, "f('a')")), 'identity');
  assert.equal(triviality(await traceOf(identity, "f(' a ')")), undefined);
  assert.equal(triviality(await traceOf(RECURSIVE, 'fact(3)')), undefined);
});

const SET_LOOP = `def f(words):
    out = []
    for w in set(words):
        out.append(w)
    return sorted(out)
`;

test('set iteration under hash seeds: truths that move are found, and confirmed generation asks none of them', async () => {
  const call = "f(['apple', 'banana', 'cherry', 'date', 'elder'])";
  const [t0, t1, t2] = await Promise.all([traceOf(SET_LOOP, call, 0), traceOf(SET_LOOP, call, 1), traceOf(SET_LOOP, call, 2)]);
  const plain = generateQuestions(t0, ALL);
  const moved = [...movedQuestions(plain, t1), ...movedQuestions(plain, t2)];
  assert.ok(
    moved.some((q) => q.kind === 'state' && (q.var === 'w' || q.var === 'out')),
    'the order of w (and out) depends on the seed',
  );
  assert.ok(!moved.some((q) => q.kind === 'output'), 'sorted(out) does not');
  const confirmed = generateQuestions(t0, { ...ALL, confirm: confirmIn([t1, t2]) });
  assert.ok(confirmed.some((q) => q.kind === 'output'));
  assert.deepEqual([...movedQuestions(confirmed, t1), ...movedQuestions(confirmed, t2)], []);
  assert.ok(confirmed.length < plain.length);
});

test('the clock: a value read from it moves between two runs and is not asked; code reading it is named', async () => {
  const code = 'import time\n\n\ndef f(n):\n    t = time.time_ns()\n    k = n * 2\n    return k\n';
  const [a, b] = [await traceOf(code, 'f(2)'), await traceOf(code, 'f(2)')];
  const qs = generateQuestions(a, { ...ALL, confirm: confirmIn([b]) });
  assert.ok(!stateQs(qs).some((q) => q.var === 't'));
  assert.ok(stateQs(qs).some((q) => q.var === 'k'));
  assert.equal(machineDependence(code), 'reads_clock');
  assert.equal(machineDependence('import datetime\ndef f():\n    return datetime.date.today()\n'), 'reads_clock');
  assert.equal(machineDependence('import os\ndef f():\n    return os.environ.get("X")\n'), 'reads_environment');
  assert.equal(machineDependence('import os\ndef f(p):\n    return os.path.expanduser(p)\n'), 'reads_home');
  assert.equal(machineDependence('import sys\ndef f():\n    return len(sys.argv)\n'), 'reads_argv');
  assert.equal(machineDependence('import os\ndef f():\n    return os.getcwd()\n'), 'reads_paths');
  assert.equal(machineDependence('def f(x):\n    # time.time() is not called here\n    return x + 1\n'), undefined);
  assert.equal(machineDependence('import time\ndef f(t):\n    return time.strftime("%Y", t)\n'), undefined, 'a given time is no clock read');
});

test('local paths of the harvesting machine are found in stored text', () => {
  const find = localPathFinder(['/srv/projects/demo'], { HOME: '/home/alice' });
  assert.equal(find('{"file": "/srv/projects/demo/x.py"}'), '/srv/projects/demo');
  assert.equal(find("'/home/bob/.cache'"), '/home/bob');
  assert.equal(find("'C:\\\\Users\\\\carol\\\\x'"), 'C:\\\\Users\\\\carol');
  assert.equal(find('{"file": "pkg/x.py", "value": "/nonexistent"}'), '/nonexistent');
  assert.equal(find('{"file": "pkg/x.py", "value": "/usr/lib"}'), undefined);
});

test('question generation is linear in the trace: a 30,000-step run, its truths exact (benchmark number printed)', async () => {
  const code = `def walk(n):
    total = 0
    i = 0
    while i < n:
        if i % 3 == 0:
            total += i
        i += 1
    return total
`;
  const n = 10_000;
  const trace = await poolAt(0).trace({ source: code, path: 'prog.py', entry: { kind: 'call', expr: `walk(${n})` }, limits: { steps: 200_000 } });
  assert.ok(trace.steps.length > 30_000, `${trace.steps.length} steps`);
  const t0 = process.hrtime.bigint();
  const qs = generateQuestions(trace, { maxNextLine: 5, maxState: 5, maxStateAny: 2, maxCoverage: 2 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(`# generateQuestions on ${trace.steps.length} steps: ${ms.toFixed(0)} ms`);
  const expected = Array.from({ length: n }, (_, i) => i)
    .filter((i) => i % 3 === 0)
    .reduce((a, b) => a + b, 0);
  const out = qs.find((q) => q.kind === 'output');
  assert.ok(out && out.kind === 'output' && 'value' in out.truth && out.truth.value.repr === String(expected));
  assert.equal(qs.filter((q) => q.kind === 'next_line').length, 5);
  for (const q of qs) {
    if (q.kind === 'next_line' && q.line === 4) assert.equal(q.truth.line, q.k === n + 1 ? 8 : 5);
    if (q.kind === 'next_line' && q.line === 7) assert.equal(q.truth.line, 4);
    if (q.kind === 'state' && q.var === 'i' && q.line === 7 && 'repr' in q.truth) assert.equal(q.truth.repr, String(q.k));
  }
});

test("the ExecVerify authors' template asks through the engine's one road, and its reference answer earns R = 2", async () => {
  const template = BUILTIN_TEMPLATES.find((t) => t.name === 'execverify-authors')!;
  const trace = await traceOf(RECURSIVE, 'fact(3)');
  const prepared = prepareAsk(trace, template, { kind: 'call' });
  const prompt = prepared.prompts[0]!;
  assert.ok(prompt.questions.length >= 2);
  const judge = new JudgeClient(poolAt(0));
  const reward = await judge.reward(groundTruthString(prompt.groundTruth), prompt.reference);
  assert.equal(reward.reward, 2);
  // The same answers in the layout the authors' models write: reasoning first, `-1.` with a period.
  const wordy = `<reasoning>\nfact(3) calls fact(2) and fact(1).\n</reasoning>\n${prompt.reference.replace(/^-1$/m, '-1.')}`;
  assert.equal((await judge.reward(groundTruthString(prompt.groundTruth), wordy)).reward, 2);
});
