// Question generation on real traces (TracerPool): selection policy, caps,
// determinism, exact ground truth only, the interactive next-step set, and
// the full road — trace → questions → ground truth → perfect answer → R = 2.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TracerPool } from '../../src/engine/trace/runner';
import type { Trace } from '../../src/engine/trace/schema';
import { decodeTrace } from '../../src/engine/trace/decode';
import {
  QuestionSetSchema,
  functionLines,
  generateQuestions,
  nextStepQuestions,
  referenceAnswer,
  toGroundTruth,
  type Question,
} from '../../src/engine/questions';
import { JudgeClient } from '../../src/engine/judge/client';

const LOOP = `def f(xs):
    total = 0
    for x in xs:
        if x % 2 == 0:
            total += x
        else:
            total -= 1
    return total
`;

let pool: TracerPool;
let judge: JudgeClient;
const traces = new Map<string, Trace>();
async function traceOf(source: string, call: string, limits?: Record<string, number>): Promise<Trace> {
  const key = `${source}\u0000${call}\u0000${JSON.stringify(limits ?? {})}`;
  let t = traces.get(key);
  if (!t) {
    t = await pool.trace({ source, path: 'prog.py', entry: { kind: 'call', expr: call }, ...(limits ? { limits } : {}) });
    traces.set(key, t);
  }
  return t;
}

before(() => {
  pool = new TracerPool({ size: 1 });
  judge = new JudgeClient(pool);
});
after(() => pool.close());

test('output first, then at most 5 next-line and 5 state questions, all valid against QuestionSchema', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([1, 2, 3, 4, 5, 6])'));
  assert.equal(qs[0]!.kind, 'output');
  assert.ok(qs.filter((q) => q.kind === 'next_line').length <= 5);
  assert.ok(qs.filter((q) => q.kind === 'state').length <= 5);
  assert.equal(qs.filter((q) => q.kind === 'next_line').length, 5, 'a loop of six has enough to ask');
  assert.ok(QuestionSetSchema.safeParse(qs).success);
  const kinds = qs.map((q) => q.kind);
  assert.deepEqual(
    kinds,
    [...kinds].sort((a, b) => ['output', 'next_line', 'state'].indexOf(a) - ['output', 'next_line', 'state'].indexOf(b)),
  );
});

test('the same seed gives the same questions; another seed may choose others', async () => {
  const t = await traceOf(LOOP, 'f([1, 2, 3, 4, 5, 6])');
  const a = generateQuestions(t, { seed: 7 });
  assert.deepEqual(generateQuestions(t, { seed: 7 }), a);
  const ids = new Set(
    [0, 1, 2, 3, 4, 5].map((seed) =>
      generateQuestions(t, { seed })
        .map((q) => q.id)
        .join(','),
    ),
  );
  assert.ok(ids.size > 1, 'selection depends on the seed');
});

test('ground truth of next-line and state questions is what the interpreter did', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([1, 2, 3])'), { maxNextLine: 50, maxState: 50, unchangedShare: 0 });
  const byId = new Map(qs.map((q) => [q.id, q] as const));
  // f([1, 2, 3]): x=1 → else branch (line 7), x=2 → line 5, x=3 → line 7, then return.
  const nl = (id: string) => {
    const q = byId.get(id);
    return q && q.kind === 'next_line' ? q.truth.line : undefined;
  };
  assert.equal(nl('next_line:4:1'), 7);
  assert.equal(nl('next_line:4:2'), 5);
  assert.equal(nl('next_line:3:4'), 8);
  assert.equal(nl('next_line:8:1'), -1);
  const st = byId.get('state:5:1:total');
  assert.ok(st && st.kind === 'state' && !('nil' in st.truth));
  if (st && st.kind === 'state' && !('nil' in st.truth)) assert.deepEqual([st.truth.repr, st.truth.type], ['1', 'int']);
});

test('informative lines are preferred: loop and branch headers, jumps and the end', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([1, 2, 3, 4, 5, 6])'), { seed: 3 });
  for (const q of qs) {
    if (q.kind !== 'next_line') continue;
    const header = /^(for|if|else|while)\b/.test(q.lineText);
    assert.ok(header || q.truth.line !== q.line + 1, `${q.id} is a plain sequential step`);
  }
});

test('a few state questions are about variables the line does not change', async () => {
  const t = await traceOf(LOOP, 'f([1, 2, 3, 4, 5, 6])');
  const d = decodeTrace(t);
  let unchangedSeen = false;
  for (const seed of [0, 1, 2]) {
    for (const q of generateQuestions(t, { seed })) {
      if (q.kind !== 'state' || 'nil' in q.truth) continue;
      const run = d.steps.findIndex(
        (s, i) => s.event === 'line' && s.line === q.line && d.steps.slice(0, i + 1).filter((x) => x.event === 'line' && x.line === q.line).length === q.k,
      );
      const before = d.locals(run)[q.var];
      if (before && before.repr === q.truth.repr) unchangedSeen = true;
    }
  }
  assert.ok(unchangedSeen);
});

test('a line that never runs gives a Nil state question', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([2, 4])'), { seed: 1 });
  const nil = qs.find((q) => q.kind === 'state' && 'nil' in q.truth);
  assert.ok(nil && nil.kind === 'state');
  assert.equal(nil?.kind === 'state' ? nil.line : 0, 7);
});

test('text-matched next-line questions never target a line whose text repeats in the function', async () => {
  const src = `def g(n):
    i = 0
    while i < n:
        i += 1
        if i == 2:
            i += 1
    return i
`;
  const t = await traceOf(src, 'g(5)');
  const texts = generateQuestions(t, { maxNextLine: 50 }).flatMap((q) => (q.kind === 'next_line' ? [q.truth.text] : []));
  assert.ok(texts.length > 0);
  assert.ok(!texts.includes('i += 1'), 'ambiguous text asked');
  const numbered = generateQuestions(t, { maxNextLine: 50, textMatchedNextLine: false }).filter((q) => q.kind === 'next_line');
  assert.ok(
    numbered.some((q) => q.kind === 'next_line' && q.truth.text === 'i += 1'),
    'with line-number answers nothing is skipped',
  );
});

test('no question about a truncated value', async () => {
  const src = `def h(n):
    big = list(range(n))
    small = len(big)
    return small
`;
  const t = await traceOf(src, 'h(500)', { reprChars: 40, containerItems: 5 });
  const qs = generateQuestions(t, { maxState: 50, maxStateAny: 50 });
  assert.ok(qs.some((q) => q.kind === 'state' && q.var === 'small'));
  assert.ok(!qs.some((q) => (q.kind === 'state' || q.kind === 'state_any') && q.var === 'big'), 'asked about a truncated list');
});

test('objects shown only by their address are not asked about', async () => {
  const src = `class Node:
    pass

def mk(n):
    node = Node()
    node.v = n
    k = n + 1
    return node
`;
  const qs = generateQuestions(await traceOf(src, 'mk(2)'), { maxState: 50, maxStateAny: 50 });
  assert.ok(qs.some((q) => q.kind === 'state' && q.var === 'k'));
  assert.ok(!qs.some((q) => (q.kind === 'state' || q.kind === 'state_any') && q.var === 'node'), 'asked for a memory address');
  assert.ok(!qs.some((q) => q.kind === 'output'), 'asked for the address of the returned object');
});

test('coverage and state_any questions on request, with both YES and NO when both exist', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([2, 4])'), { maxCoverage: 4, maxStateAny: 3 });
  const cov = qs.filter((q) => q.kind === 'coverage');
  assert.ok(cov.some((q) => q.kind === 'coverage' && q.truth.covered));
  assert.ok(cov.some((q) => q.kind === 'coverage' && !q.truth.covered && q.line === 7));
  const any = qs.find((q) => q.kind === 'state_any' && q.var === 'total' && q.line === 5);
  assert.ok(any && any.kind === 'state_any');
  if (any && any.kind === 'state_any')
    assert.deepEqual(
      any.truth.values.map((v) => v.repr),
      ['2', '6'],
    );
});

test('next-step questions: the next line, every variable the line changes, and a few it does not', async () => {
  const t = await traceOf(LOOP, 'f([1, 2, 3])');
  const d = decodeTrace(t);
  const step = d.steps.findIndex((s) => s.event === 'line' && s.line === 5);
  const qs = nextStepQuestions(t, step, { unchanged: 1 });
  assert.equal(qs[0]!.kind, 'next_line');
  assert.equal(qs[0]!.kind === 'next_line' ? qs[0]!.truth.line : 0, 3);
  const vars = qs.flatMap((q) => (q.kind === 'state' ? [q.var] : []));
  assert.equal(vars[0], 'total');
  assert.equal(vars.length, 2, 'total (changed) and one unchanged variable');
  assert.deepEqual(nextStepQuestions(t, 0), [], 'the call event is not a stop on a line');
});

test('functionLines finds the body of a decorated function and stops at the next def', () => {
  const src = '@dec\ndef a(x):\n    y = (1,\n2)\n    return y\n\ndef b():\n    pass\n';
  assert.deepEqual(functionLines(src, 1), [2, 3, 4, 5]);
});

test('trace → questions → ground truth → the perfect answer earns R = 2, a wrong one less', async () => {
  const qs = generateQuestions(await traceOf(LOOP, 'f([1, 2, 3, 4])'), { seed: 11 });
  const gt = toGroundTruth(qs, 'execverify');
  const perfect = await judge.reward(gt, referenceAnswer(qs, 'execverify'));
  assert.equal(perfect.reward, 2, JSON.stringify(perfect.breakdown.filter((b) => !b.verdict.correct)));
  const wrongLine = referenceAnswer(qs, 'execverify').replace('for x in xs:', 'return total');
  const worse = await judge.reward(gt, wrongLine);
  assert.ok(worse.reward < 2 && worse.reward > 0, String(worse.reward));
});

test('real CRUXEval programs: generated questions are answered perfectly by their own truth', async () => {
  const path = join(__dirname, '..', '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');
  assert.ok(existsSync(path), `CRUXEval data missing at ${path} (expected ../shared/benchmarks from the repo root)`);
  const rows = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .slice(0, 25)
    .map((l) => JSON.parse(l) as { code: string; input: string; id: string });
  const items: { groundTruth: ReturnType<typeof toGroundTruth>; response: string }[] = [];
  for (const r of rows) {
    const t = await pool.trace({ source: r.code + '\n', path: `${r.id}.py`, entry: { kind: 'call', expr: `f(${r.input})` } });
    const qs: Question[] = generateQuestions(t, { seed: 5 });
    if (qs.length < 2) continue;
    items.push({ groundTruth: toGroundTruth(qs, 'execverify'), response: referenceAnswer(qs, 'execverify') });
  }
  assert.ok(items.length >= 20, `only ${items.length} programs gave questions`);
  const rewards = await judge.rewardBatch(items);
  const bad = rewards.flatMap((r, i) => (r.reward === 2 ? [] : [`${i}: ${JSON.stringify(r.breakdown.filter((b) => !b.verdict.correct))}`]));
  assert.deepEqual(bad, []);
});
