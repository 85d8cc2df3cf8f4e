// The derived facts of SEMANTICS.md §2 (facts.ts) on real traces of programs
// written for them: loops with else, break/continue, try/except/finally,
// with, early return, closures, recursion, generators, classes,
// comprehensions per Python version, multi-line statements.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TracerPool } from '../../src/engine/trace/runner';
import { decodeTrace } from '../../src/engine/trace/decode';
import { output, traceFacts, type TraceFacts } from '../../src/engine/trace/facts';
import type { Trace } from '../../src/engine/trace/schema';

const pool = new TracerPool({ size: 2 });
after(() => pool.close());

/** Line number of the line holding `marker` (1-based). */
function lineOf(src: string, marker: string): number {
  const i = src.split('\n').findIndex((l) => l.includes(marker));
  assert.ok(i >= 0, `marker ${marker} not found`);
  return i + 1;
}

async function facts(source: string, expr: string): Promise<{ f: TraceFacts; trace: Trace }> {
  const trace = await pool.trace({ source, path: 'prog.py', entry: { kind: 'call', expr } });
  return { f: traceFacts(decodeTrace(trace)), trace };
}

function reprOf(st: { locals: Record<string, { repr: string }> } | undefined, name: string): string | undefined {
  return st?.locals[name]?.repr;
}

function minor(trace: Trace): number {
  return Number(trace.python!.version.split('.')[1]);
}

const FOR_ELSE = `def f(xs):
    total = 0
    for x in xs:            # for
        if x < 0:           # if
            break           # brk
        total += x          # add
    else:
        total = -1          # else
    return total            # ret
`;

test('for/else: the header runs once more at exhaustion, then else', async () => {
  const { f, trace } = await facts(FOR_ELSE, 'f([1, 2])');
  const fr = f.frameOfCall('f')!.id;
  const header = lineOf(FOR_ELSE, '# for');
  assert.equal(f.lineRuns(fr, header).length, 3);
  assert.equal(f.nextLineAfter(fr, header, 3), lineOf(FOR_ELSE, '# else'));
  assert.equal(reprOf(f.stateAfter(fr, lineOf(FOR_ELSE, '# add'), 2), 'total'), '3');
  assert.equal(f.nextLineAfter(fr, lineOf(FOR_ELSE, '# ret'), 1), -1);
  assert.deepEqual(output(trace), { kind: 'returned', value: { repr: '-1', type: 'int', literal: true } });
});

test('break skips else; coverage says so', async () => {
  const { f } = await facts(FOR_ELSE, 'f([1, -1, 5])');
  const fr = f.frameOfCall('f')!.id;
  assert.equal(f.nextLineAfter(fr, lineOf(FOR_ELSE, '# if'), 2), lineOf(FOR_ELSE, '# brk'));
  assert.equal(f.nextLineAfter(fr, lineOf(FOR_ELSE, '# brk'), 1), lineOf(FOR_ELSE, '# ret'));
  assert.equal(f.coverage(lineOf(FOR_ELSE, '# else')), false);
  assert.equal(f.coverage(lineOf(FOR_ELSE, '# brk')), true);
  assert.equal(f.stateAfter(fr, lineOf(FOR_ELSE, '# brk'), 2), undefined, 'break ran once');
  assert.equal(f.output().kind === 'returned' && f.output().kind, 'returned');
});

const WHILE = `def f(n):
    i = 0
    odd = []
    while i < n:            # while
        i += 1
        if i % 2 == 0:
            continue        # cont
        odd.append(i)       # app
    else:
        odd.append(-1)      # else
    return odd
`;

test('while with continue and else', async () => {
  const { f } = await facts(WHILE, 'f(5)');
  const fr = f.frameOfCall('f')!.id;
  assert.equal(f.nextLineAfter(fr, lineOf(WHILE, '# cont'), 2), lineOf(WHILE, '# while'));
  assert.equal(reprOf(f.stateAfter(fr, lineOf(WHILE, '# app'), 3), 'odd'), '[1, 3, 5]');
  assert.equal(reprOf(f.stateAfter(fr, lineOf(WHILE, '# else'), 1), 'odd'), '[1, 3, 5, -1]');
});

const TRY = `def g(x):
    if x == 0:
        raise ValueError("zero")     # raise
    return 10 // x

def f(xs):
    out = []
    for x in xs:
        try:
            out.append(g(x))         # call
        except ValueError as e:
            out.append(str(e))       # handler
        finally:
            out.append("f")          # finally
    return out
`;

test('exceptions caught: the except clause is the next line, then finally', async () => {
  const { f, trace } = await facts(TRY, 'f([2, 0])');
  const fr = f.frameOfCall('f')!.id;
  const exceptLine = lineOf(TRY, 'except ValueError');
  assert.equal(f.nextLineAfter(fr, lineOf(TRY, '# call'), 2), exceptLine);
  assert.equal(f.nextLineAfter(fr, exceptLine, 1), lineOf(TRY, '# handler'));
  // step into from the call line goes into g
  const into = f.nextLineInto(fr, lineOf(TRY, '# call'), 1)!;
  assert.equal(into.fn, 'g');
  assert.equal(into.line, 2);
  const g2 = f.frameOfCall('g', 2)!.id;
  assert.equal(f.nextLineAfter(g2, lineOf(TRY, '# raise'), 1), -1, 'g raises');
  const st = f.stateAfter(g2, lineOf(TRY, '# raise'), 1)!;
  assert.equal(st.event, 'exception');
  assert.equal(reprOf(st, 'x'), '0');
  assert.equal(output(trace).kind === 'returned' && output(trace).kind, 'returned');
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, "[5, 'f', 'zero', 'f']");
});

const PROPAGATE = `def g(x):
    raise KeyError(x + 1)            # raise

def f():
    a = 1
    try:
        g(a)                         # callg
    finally:
        a = 2                        # fin
    return a
`;

test('an exception propagating through finally: -1 after the finally, outcome raised', async () => {
  const { f, trace } = await facts(PROPAGATE, 'f()');
  const fr = f.frameOfCall('f')!.id;
  assert.equal(f.nextLineAfter(fr, lineOf(PROPAGATE, '# callg'), 1), lineOf(PROPAGATE, '# fin'));
  assert.equal(f.nextLineAfter(fr, lineOf(PROPAGATE, '# fin'), 1), -1);
  assert.equal(reprOf(f.stateAfter(fr, lineOf(PROPAGATE, '# fin'), 1), 'a'), '2');
  assert.deepEqual(trace.outcome, { kind: 'raised', type: 'KeyError', message: '2', line: lineOf(PROPAGATE, '# raise'), file: 0 });
  assert.equal(f.coverage(lineOf(PROPAGATE, 'return a')), false);
});

const WITH = `class Box:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

def f():
    log = []
    with Box() as b:                 # with
        log.append(1)                # body
    log.append(2)                    # after
    return log
`;

test('with: __enter__ and __exit__ are traced frames; step over stays in f', async () => {
  const { f, trace } = await facts(WITH, 'f()');
  const fr = f.frameOfCall('f')!.id;
  const calls = trace.steps.filter((s) => s.event === 'call').map((s) => s.fn.replace(/^Box\./, ''));
  assert.deepEqual(calls, ['f', '__enter__', '__exit__']);
  const next = f.nextLineAfter(fr, lineOf(WITH, '# body'), 1);
  // 3.10+ revisits the with line to run __exit__; before, it goes straight on
  assert.ok(next === lineOf(WITH, '# with') || next === lineOf(WITH, '# after'), String(next));
  assert.equal(reprOf(f.stateAfter(fr, lineOf(WITH, '# after'), 1), 'log'), '[1, 2]');
});

const EARLY = `def f(xs):
    for x in xs:
        if x > 2:
            return x                 # early
    return None                      # late
`;

test('early return: -1 after the return line; the late return never runs', async () => {
  const { f } = await facts(EARLY, 'f([1, 3])');
  const fr = f.frameOfCall('f')!.id;
  assert.equal(f.nextLineAfter(fr, lineOf(EARLY, '# early'), 1), -1);
  assert.equal(f.coverage(lineOf(EARLY, '# late')), false);
  const st = f.stateAfter(fr, lineOf(EARLY, '# early'), 1)!;
  assert.equal(st.event, 'return');
  assert.equal(reprOf(st, 'x'), '3');
});

const CLOSURE = `def f(n):
    base = 10
    def add(k):
        return base + k + n          # inner
    r = [add(1)]
    base = 100
    r.append(add(2))
    return r
`;

test('closures: each call of the nested function is its own frame with current free variables', async () => {
  const { f, trace } = await facts(CLOSURE, 'f(1)');
  const name = minor(trace) >= 11 ? 'f.<locals>.add' : 'add';
  const first = f.frameOfCall(name, 1)!;
  const second = f.frameOfCall(name, 2)!;
  assert.notEqual(first.id, second.id);
  const inner = lineOf(CLOSURE, '# inner');
  assert.equal(reprOf(f.stateAfter(first.id, inner, 1), 'base'), '10');
  assert.equal(reprOf(f.stateAfter(second.id, inner, 1), 'base'), '100');
  assert.equal(f.lineRun(second.id, inner, 2), undefined, 'k counts per frame');
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, '[12, 103]');
});

const RECURSION = `def f(n):
    if n <= 1:
        return 1
    sub = f(n - 1)                   # rec
    return n * sub                   # mul
`;

test('recursion: the k-th run is counted per frame; the stack shows every call site', async () => {
  const { f, trace } = await facts(RECURSION, 'f(3)');
  const d = f.decoded;
  const mul = lineOf(RECURSION, '# mul');
  const outer = f.frameOfCall('f', 1)!.id;
  const middle = f.frameOfCall('f', 2)!.id;
  assert.equal(reprOf(f.stateAfter(outer, mul, 1), 'sub'), '2');
  assert.equal(reprOf(f.stateAfter(middle, mul, 1), 'sub'), '1');
  assert.equal(f.nextLineAfter(outer, lineOf(RECURSION, '# rec'), 1), mul, 'step over the recursive call');
  const into = f.nextLineInto(outer, lineOf(RECURSION, '# rec'), 1)!;
  assert.equal(into.frame, middle);
  const deepest = trace.steps.findIndex((s) => s.depth === 2 && s.event === 'line');
  const stack = d.stack(deepest);
  assert.deepEqual(
    stack.map((r) => [r.frame, r.line]),
    [
      [outer, lineOf(RECURSION, '# rec')],
      [middle, lineOf(RECURSION, '# rec')],
      [trace.steps[deepest]!.frame, 2],
    ],
  );
});

const GENERATOR = `def gen(n):
    i = 0
    while i < n:
        yield i                      # yield
        i += 1                       # inc
    return "done"

def f():
    out = []
    for v in gen(2):                 # loop
        out.append(v)
    return out
`;

test('generators: one frame across resumes; a yield is not the end of the frame', async () => {
  const { f, trace } = await facts(GENERATOR, 'f()');
  const g = f.frameOfCall('gen')!;
  const events = g.steps.map((i) => trace.steps[i]!).filter((s) => s.event !== 'line');
  assert.deepEqual(
    events.map((s) => [s.event, Boolean(s.resumed), Boolean(s.yielded)]),
    [
      ['call', false, false],
      ['return', false, true],
      ['call', true, false],
      ['return', false, true],
      ['call', true, false],
      ['return', false, false],
    ],
  );
  assert.equal(f.nextLineAfter(g.id, lineOf(GENERATOR, '# yield'), 1), lineOf(GENERATOR, '# inc'));
  const st = f.stateAfter(g.id, lineOf(GENERATOR, '# yield'), 2)!;
  assert.equal(st.event, 'return');
  assert.equal(reprOf(st, 'i'), '1');
  // step into from f's loop header lands in the generator
  const fr = f.frameOfCall('f')!.id;
  assert.equal(f.nextLineInto(fr, lineOf(GENERATOR, '# loop'), 1)!.frame, g.id);
});

const CLASSES = `class Counter:
    def __init__(self, start):
        self.count = start
    def bump(self, k):
        self.count += k              # bump
        return self.count

def f():
    c = Counter(5)
    c.bump(2)
    return c.count
`;

test('methods: self attributes are in the state after a line', async () => {
  const { f, trace } = await facts(CLASSES, 'f()');
  const bump = f.frameOfCall(minor(trace) >= 11 ? 'Counter.bump' : 'bump')!.id;
  const st = f.stateAfter(bump, lineOf(CLASSES, '# bump'), 1)!;
  assert.equal(st.locals.self!.attrs!.count!.repr, '7');
  assert.equal(st.locals.self!.type, 'prog.Counter');
});

const COMP = `def f(xs):
    sq = [x * x for x in xs]         # comp
    return sum(sq)
`;

test('comprehensions: own frame before 3.12, inlined from 3.12', async () => {
  const { f, trace } = await facts(COMP, 'f([1, 2, 3])');
  const fns = new Set(trace.steps.map((s) => s.fn));
  const fr = f.frameOfCall('f')!.id;
  const comp = lineOf(COMP, '# comp');
  const runs = f.lineRuns(fr, comp).length;
  if (minor(trace) >= 12) {
    assert.deepEqual([...fns], ['f']);
    assert.ok(runs > 1, 'the inlined loop revisits the line');
  } else {
    assert.equal(fns.size, 2);
    assert.equal(runs, 1);
    assert.ok([...fns].some((n) => n.endsWith('<listcomp>')));
  }
  assert.equal(reprOf(f.stateAfter(fr, comp, runs), 'sq'), '[1, 4, 9]');
  assert.equal(f.nextLineAfter(fr, comp, runs), lineOf(COMP, 'return sum'));
});

const MULTI = `def f(a, b):
    total = (a +
             b)
    return total
`;

test('multi-line statements report the lines the interpreter reports', async () => {
  const { f } = await facts(MULTI, 'f(1, 2)');
  const fr = f.frameOfCall('f')!.id;
  const lines = f.lineRuns(fr, 2).length + f.lineRuns(fr, 3).length;
  assert.ok(lines >= 1);
  assert.equal(f.coverage(2), true);
  const last = f.lineRuns(fr, 4)[0]!;
  assert.equal(f.decoded.locals(last.step).total!.repr, '3');
});

test('facts on a trace cut by a limit are unknown, not invented', async () => {
  const src = 'def f():\n    n = 0\n    while n >= 0:\n        n += 1\n';
  const trace = await pool.trace({ source: src, entry: { kind: 'call', expr: 'f()' }, limits: { steps: 20 } });
  const f = traceFacts(decodeTrace(trace));
  const fr = f.frameOfCall('f')!.id;
  const runs = f.lineRuns(fr, 4);
  assert.equal(f.nextLineAfter(fr, 4, runs.length), undefined);
  assert.equal(f.stateAfter(fr, 4, runs.length), undefined);
  assert.equal(f.nextLineAfter(fr, 4, 1), 3);
  assert.throws(() => f.lineRun(fr, 4, 0), RangeError);
});
