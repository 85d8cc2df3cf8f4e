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

const MUTATIONS: Array<[string, (t: any) => void]> = [
  ['step not an object', (t) => (t.steps[1] = 5)],
  ['bad event', (t) => (t.steps[1].event = 'jump')],
  ['negative frame', (t) => (t.steps[1].frame = -1)],
  ['fractional line', (t) => (t.steps[1].line = 1.5)],
  ['fn missing', (t) => delete t.steps[1].fn],
  ['parent not a number', (t) => (t.steps[0].parent = 'x')],
  ['value repr not a string', (t) => (Object.values(t.steps[0].set ?? { a: t.steps.at(-1).value })[0] as any).repr = 1],
  ['nested item bad', (t) => (t.outcome.value.attrs.v.entries[0][1].literal = 'yes')],
  ['entries not pairs', (t) => (t.outcome.value.attrs.v.entries[0] = [t.outcome.value])],
  ['del not strings', (t) => (t.steps.find((s: any) => s.del).del = [1])],
  ['exc without message', (t) => delete t.steps.find((s: any) => s.exc).exc.message],
  ['yielded not boolean', (t) => (t.steps.find((s: any) => s.yielded).yielded = 1)],
  ['schema version', (t) => (t.schema = 'execverify.trace/0')],
  ['outcome kind', (t) => (t.outcome.kind = 'ok')],
  ['len negative', (t) => (t.outcome.value.attrs.v.len = -1)],
];

for (const [name, mutate] of MUTATIONS) {
  test(`rejected by both: ${name}`, () => {
    const t = JSON.parse(JSON.stringify(real)) as unknown;
    mutate(t);
    assert.equal(TraceSchema.safeParse(t).success, false, 'TraceSchema rejects it');
    const r = safeParseTrace(t);
    assert.equal(r.ok, false, 'parseTrace rejects it');
  });
}
