// parseTrace (the fast validator) accepts and rejects exactly what TraceSchema does.
/* eslint-disable @typescript-eslint/no-explicit-any -- the mutations poke at arbitrary JSON on purpose */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TracerPool } from '../../src/engine/trace/runner';
import { TraceSchema, type Trace } from '../../src/engine/trace/schema';
import { parseTrace, safeParseTrace } from '../../src/engine/trace/validate';

const pool = new TracerPool({ size: 1 });
after(() => pool.close());

const SRC = [
  'class P:',
  '    def __init__(self):',
  '        self.v = {"k": [1, (2, 3)], 4: {5}}',
  'def g():',
  '    yield 1',
  'def f():',
  '    p = P()',
  '    it = list(g())',
  '    try:',
  '        raise ValueError("x")',
  '    except ValueError:',
  '        pass',
  '    del it',
  '    return p',
].join('\n');

let real: Trace;

test('a real trace passes both validators with the same result', async () => {
  real = await pool.trace({ source: SRC, entry: { kind: 'call', expr: 'f()' } });
  const json = JSON.parse(JSON.stringify(real)) as unknown;
  assert.deepEqual(parseTrace(json), TraceSchema.parse(json));
  const kinds = new Set(real.steps.map((s) => s.event));
  assert.deepEqual([...kinds].sort(), ['call', 'exception', 'line', 'return']);
});

test('traces of a shared child (proven-shareable jobs, python-tracer/execverify/shareable.py) pass both validators and say so', async () => {
  const plain = 'def f(xs):\n    return sorted(xs)[::-1]\n';
  const results = await pool.traceMany([
    { source: plain, entry: { kind: 'call', expr: 'f([2, 1])' } },
    { source: plain, entry: { kind: 'call', expr: 'f([3])' } },
    { source: 'import os\n' + plain, entry: { kind: 'call', expr: 'f([4])' } },
  ]);
  const labels = results.map((t) => {
    assert.ok(!(t instanceof Error), String(t));
    const json = JSON.parse(JSON.stringify(t)) as unknown;
    assert.deepEqual(parseTrace(json), TraceSchema.parse(json));
    return t.python?.isolation ?? '';
  });
  assert.deepEqual(
    labels.map((l) => l.endsWith('+shared')),
    [true, true, false],
  );
  assert.equal(labels[0], labels[2] + '+shared');
  const forged = JSON.parse(JSON.stringify(results[0])) as { python: { isolation: string } };
  forged.python.isolation = 'shared';
  assert.equal(safeParseTrace(forged).ok, false);
});

const MUTATIONS: Array<[string, (t: any) => void]> = [
  ['step not an object', (t) => (t.steps[1] = 5)],
  ['bad event', (t) => (t.steps[1].event = 'jump')],
  ['negative frame', (t) => (t.steps[1].frame = -1)],
  ['fractional line', (t) => (t.steps[1].line = 1.5)],
  ['fn missing', (t) => delete t.steps[1].fn],
  ['parent not a number', (t) => (t.steps[0].parent = 'x')],
  ['value repr not a string', (t) => ((Object.values(t.steps[0].set ?? { a: t.steps.at(-1).value })[0] as any).repr = 1)],
  ['nested item bad', (t) => (t.outcome.value.attrs.v.entries[0][1].literal = 'yes')],
  ['entries not pairs', (t) => (t.outcome.value.attrs.v.entries[0] = [t.outcome.value])],
  ['del not strings', (t) => (t.steps.find((s: any) => s.del).del = [1])],
  ['exc without message', (t) => delete t.steps.find((s: any) => s.exc).exc.message],
  ['yielded not boolean', (t) => (t.steps.find((s: any) => s.yielded).yielded = 1)],
  ['schema version', (t) => (t.schema = 'execverify.trace/0')],
  ['outcome kind', (t) => (t.outcome.kind = 'ok')],
  ['len negative', (t) => (t.outcome.value.attrs.v.len = -1)],
  // What the schema's comments say cannot be, beyond the shapes:
  ['unknown file index', (t) => (t.steps[1].file = 9)],
  ['negative line', (t) => (t.steps[1].line = -3)],
  ['steps out of order', (t) => ([t.steps[1], t.steps[2]] = [t.steps[2], t.steps[1]])],
  ['index not dense', (t) => (t.steps[3].i = 4)],
  ['a frame with no call', (t) => (t.steps[0].event = 'line')],
  [
    'a frame that starts with a return',
    (t) => {
      t.steps = t.steps.slice(t.steps.findIndex((s: any) => s.event === 'return'));
      t.steps.forEach((s: any, i: number) => (s.i = i));
    },
  ],
  ['parent not begun', (t) => (t.steps[0].parent = 99)],
  ['parent is itself', (t) => (t.steps[0].parent = t.steps[0].frame)],
  ['raised in an unknown file', (t) => (t.outcome = { kind: 'raised', type: 'E', message: '', line: 1, file: 5 })],
  ['raised at a negative line', (t) => (t.outcome = { kind: 'raised', type: 'E', message: '', line: -1 })],
];

test('a refused trace names the step and what was expected', () => {
  const t = JSON.parse(JSON.stringify(real)) as any;
  t.steps[1].file = 9;
  assert.deepEqual(safeParseTrace(t), { ok: false, error: 'steps[1].file: expected an index into files (0..0); got 9' });
  const z = TraceSchema.safeParse(t);
  assert.equal(z.success ? '' : z.error.issues[0]!.path.join('.'), 'steps.1.file');
});

for (const [name, mutate] of MUTATIONS) {
  test(`rejected by both: ${name}`, () => {
    const t = JSON.parse(JSON.stringify(real)) as unknown;
    mutate(t);
    assert.equal(TraceSchema.safeParse(t).success, false, 'TraceSchema rejects it');
    const r = safeParseTrace(t);
    assert.equal(r.ok, false, 'parseTrace rejects it');
  });
}
