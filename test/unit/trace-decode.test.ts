// decodeTrace: full locals at any step (checkpointed diffs) and the call stack.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeTrace } from '../../src/engine/trace/decode';
import { TracerPool } from '../../src/engine/trace/runner';
import type { Step, Trace, Value } from '../../src/engine/trace/schema';

const pool = new TracerPool({ size: 1 });
after(() => pool.close());

/** The obvious decoder: replay every diff from the start (the oracle). */
function replay(trace: Trace, upTo: number): Record<string, string> {
  const frame = trace.steps[upTo]!.frame;
  const loc: Record<string, string> = {};
  for (let i = 0; i <= upTo; i++) {
    const s = trace.steps[i]!;
    if (s.frame !== frame) continue;
    for (const [k, v] of Object.entries(s.set ?? {})) loc[k] = v.repr;
    for (const k of s.del ?? []) delete loc[k];
  }
  return loc;
}

function reprs(loc: Readonly<Record<string, Value>>): Record<string, string> {
  return Object.fromEntries(Object.entries(loc).map(([k, v]) => [k, v.repr]));
}

test('locals at every step of a real trace equal a full replay of the diffs', async () => {
  const src = [
    'def helper(xs):',
    '    acc = []',
    '    for x in xs:',
    '        acc.append(x * 2)',
    '        tmp = x',
    '        del tmp',
    '    return acc',
    'def f(n):',
    '    data = list(range(n))',
    '    out = []',
    '    for i in range(n):',
    '        out.extend(helper(data[:i]))',
    '    return len(out)',
  ].join('\n');
  const trace = await pool.trace({ source: src, entry: { kind: 'call', expr: 'f(40)' } });
  assert.ok(trace.steps.length > 1000, `long enough to cross checkpoints (${trace.steps.length})`);
  const d = decodeTrace(trace);
  for (let i = 0; i < trace.steps.length; i++) assert.deepEqual(reprs(d.locals(i)), replay(trace, i), `step ${i}`);
});

test('a deleted name is gone from the decoded state', async () => {
  const trace = await pool.trace({ source: 'def f():\n    a = 1\n    del a\n    return 0\n', entry: { kind: 'call', expr: 'f()' } });
  const d = decodeTrace(trace);
  const ret = trace.steps.length - 1;
  assert.deepEqual(Object.keys(d.locals(ret)), []);
  assert.deepEqual(reprs(d.locals(2)), { a: '1' });
});

/** A synthetic trace: `frames` interleaved frames, each changing a few locals per step. */
function synthetic(n: number, frames: number): Trace {
  const steps: Step[] = [];
  for (let i = 0; i < n; i++) {
    const frame = i % frames;
    const first = i < frames;
    const set: Record<string, Value> = {};
    set[`v${i % 7}`] = { repr: String(i), type: 'int', literal: true };
    if (first) set.start = { repr: String(frame), type: 'int', literal: true };
    const step: Step = { i, event: first ? 'call' : 'line', frame, fn: `f${frame}`, file: 0, line: 1 + (i % 50), depth: frame, set };
    if (i % 11 === 0 && !first) step.del = [`v${(i + 3) % 7}`];
    if (first) step.parent = frame === 0 ? null : frame - 1;
    steps.push(step);
  }
  return {
    schema: 'execverify.trace/1',
    python: { version: '3.12.1', implementation: 'cpython', backend: 'monitoring' },
    entry: { kind: 'call', expr: 'f0()' },
    files: [{ path: 'x.py', source: '' }],
    steps,
    outcome: { kind: 'limit', limit: 'steps', message: 'synthetic' },
    stdout: { text: '', truncated: false },
    stderr: { text: '', truncated: false },
    stats: { events: n, wallMs: 0 },
  };
}

test('random access on a 200,000-step trace matches sequential replay', () => {
  const trace = synthetic(200_000, 3);
  const d = decodeTrace(trace);
  // sequential oracle per frame, sampled
  const state = new Map<number, Record<string, string>>();
  const expected = new Map<number, Record<string, string>>();
  const sample = new Set<number>();
  for (let k = 0; k < 300; k++) sample.add((k * 7919) % trace.steps.length);
  sample.add(trace.steps.length - 1);
  trace.steps.forEach((s, i) => {
    const loc = state.get(s.frame) ?? {};
    for (const [k, v] of Object.entries(s.set ?? {})) loc[k] = v.repr;
    for (const k of s.del ?? []) delete loc[k];
    state.set(s.frame, loc);
    if (sample.has(i)) expected.set(i, { ...loc });
  });
  for (const i of [...sample].reverse()) assert.deepEqual(reprs(d.locals(i)), expected.get(i), `step ${i}`);
});

test('the stack at a step lists the callers outermost first', () => {
  const trace = synthetic(30, 3);
  const d = decodeTrace(trace);
  const st = d.stack(2);
  assert.deepEqual(
    st.map((r) => r.frame),
    [0, 1, 2],
  );
  assert.equal(st[2]!.step, 2);
  assert.equal(d.activation(2)!.parent, d.activation(1)!.index);
  assert.throws(() => d.locals(30), RangeError);
});

test('frames know their steps and their occurrence per function', async () => {
  const trace = await pool.trace({
    source: 'def g(x):\n    return x + 1\ndef f():\n    return g(1) + g(2)\n',
    entry: { kind: 'call', expr: 'f()' },
  });
  const d = decodeTrace(trace);
  const g2 = d.frameOfCall('g', 2)!;
  assert.equal(g2.occurrence, 2);
  assert.equal(trace.steps[g2.steps[0]!]!.set!.x!.repr, '2');
  assert.equal(g2.parent, d.frameOfCall('f')!.id);
  assert.equal(d.frameOfCall('g', 3), undefined);
  const inG = g2.steps[1]!;
  assert.deepEqual(
    d.stack(inG).map((r) => r.fn),
    ['f', 'g'],
  );
});
