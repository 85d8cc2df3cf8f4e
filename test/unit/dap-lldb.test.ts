// The C tracer through the real lldb DAP server (apt's lldb: lldb-vscode-14
// on Debian 12) and gcc -g -O0: the executed line sequence of a fixture
// checked against one derived by hand from its source, locals typed as lldb
// shows them, pointers never asked, C questions judged by the one judge,
// the limits, --stdin, and no process left behind. No lldb: the test fails
// (CI installs it in .ci/run), it does not skip.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main';
import { findLldbDap, traceViaLldb } from '../../src/engine/dap/lldb-tracer';
import { generateQuestions } from '../../src/engine/questions/generate';
import { JudgeClient } from '../../src/engine/judge/client';
import { resolvePython } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { decodeTrace } from '../../src/engine/trace/decode';
import { TraceSchema, type Trace, type Value } from '../../src/engine/trace/schema';
import { leftBehind } from '../support/processes';

const C = path.resolve(__dirname, '../fixtures/programs/c');
const LIMITS = { wallTimeMs: 120_000 };
// The tracer builds programs under os.tmpdir(): this run's own directory, so the process checks below see only this run's.
const TMP = mkdtempSync(path.join(tmpdir(), 'dap-lldb-test-'));
process.env.TMPDIR = TMP;
const ENV = process.env;

// Fails with what to install when the adapter is missing (never a skip).
const ADAPTER = findLldbDap(ENV);

const pool = new TracerPool({ python: resolvePython(undefined, ENV), size: 1, env: ENV });
after(async () => {
  await pool.close();
  rmSync(TMP, { recursive: true, force: true });
});

let loop: Trace | undefined;
const loopTrace = async () => (loop ??= await traceViaLldb({ path: path.join(C, 'loop.c'), env: ENV, limits: LIMITS }));

test('loop.c: the executed lines are the ones derived by hand from its source, with a frame per call of square', async () => {
  const trace = await loopTrace();
  assert.equal(trace.language, 'c');
  assert.equal(trace.python, undefined);
  assert.match(trace.runtime!.compiler, /^gcc .*; gcc -g -O0$/);
  assert.equal(trace.runtime!.debugger, path.basename(ADAPTER));
  TraceSchema.parse(trace);
  // A C trace has runtime and no python; a trace without language is Python's and needs python.
  const { runtime: _runtime, ...noRuntime } = trace;
  assert.equal(TraceSchema.safeParse(noRuntime).success, false);
  assert.equal(TraceSchema.safeParse({ ...trace, python: { version: '3.12.1', implementation: 'cpython', backend: 'monitoring' } }).success, false);
  const { language: _language, ...noLanguage } = trace;
  assert.equal(TraceSchema.safeParse(noLanguage).success, false, 'without language it is a Python trace, and it has no python');
  // main runs 14–19, then per element: 20, square's 9 10 11, back to the for (19); then 22–26.
  // lldb's step into square stops at its first body line; the `for` line comes back for i++ and the test.
  const perElement = ['20', 'call square', '9', '10', '11', 'return square', '19'];
  const expected = ['call main', '14', '15', '16', '17', '18', '19', ...perElement, ...perElement, ...perElement, '22', '23', '24', '25', '26', 'return main'];
  const got = trace.steps.map((s) => (s.event === 'line' ? String(s.line) : `${s.event} ${s.fn}`));
  assert.deepEqual(got, expected);
  // A call is at the function's own line (as for Python's co_firstlineno).
  assert.deepEqual(
    trace.steps.filter((s) => s.event === 'call').map((s) => s.line),
    [13, 8, 8, 8],
  );
  assert.deepEqual(trace.outcome, { kind: 'returned', value: { repr: '0', type: 'int', literal: true } });
  assert.equal(trace.stdout.text, '14 b 14\n');
});

test('loop.c: locals as lldb shows them, typed; a local appears once its declaration has run; a pointer is an opaque address', async () => {
  const trace = await loopTrace();
  const decoded = decodeTrace(trace);
  const at = (line: number, k = 1) => {
    const runs = trace.steps.filter((s) => s.event === 'line' && s.line === line);
    return decoded.locals(runs[k - 1]!.i);
  };
  // Before line 14 runs nothing is declared yet: no garbage of uninitialised slots.
  assert.deepEqual(Object.keys(at(14)), []);
  const before22 = at(22);
  assert.deepEqual(before22.total, { repr: '14', type: 'int', literal: true });
  assert.deepEqual(before22.c, { repr: "'a'", type: 'char', literal: true });
  assert.equal(before22.a!.repr, '[1, 2, 3]');
  assert.equal(before22.a!.type, 'int[3]');
  assert.equal(before22.a!.len, 3);
  assert.deepEqual(
    before22.a!.items!.map((v) => v.repr),
    ['1', '2', '3'],
  );
  assert.deepEqual(before22.p, { repr: 'address', type: 'int *', literal: false });
  assert.equal(before22.pt!.repr, '{.x = 4, .y = 5}');
  assert.deepEqual(before22.pt!.attrs!.y, { repr: '5', type: 'int', literal: true });
  assert.equal(before22.i, undefined, 'the loop variable is out of scope after the loop');
  assert.deepEqual(at(20, 3).i, { repr: '2', type: 'int', literal: true });
  assert.equal(at(24).c!.repr, "'b'");
  assert.equal(at(10, 2).r!.repr, '4', "square's r on its second call");
});

test('loop.c: questions never ask about the pointer; next-line and state truths judge right and wrong answers', async () => {
  const trace = await loopTrace();
  const questions = generateQuestions(trace, { seed: 1, maxState: 200, maxNextLine: 200, output: false });
  assert.ok(questions.length > 0, 'questions for a C trace');
  const state = questions.filter((q) => q.kind === 'state');
  assert.ok(state.length > 0);
  assert.ok(!state.some((q) => q.var === 'p'), 'the pointer p is never asked');
  const nextLine = questions.filter((q) => q.kind === 'next_line');
  assert.ok(nextLine.length > 0);
  // The next line after 22 is 23 in main's body (its truth comes from the trace).
  const after22 = nextLine.find((q) => q.line === 22);
  assert.ok(after22, 'a next-line question after line 22');
  assert.equal(after22.truth.line, 23);
  const judge = new JudgeClient(pool);
  const byVar = (v: string) => state.find((q) => q.var === v && !('nil' in q.truth)) as (typeof state)[number] & { truth: Value };
  const items = [];
  const total = byVar('total');
  const c = byVar('c');
  const a = byVar('a');
  assert.ok(total && c && a, `state questions on total, c and a (got ${state.map((q) => q.var).join(', ')})`);
  items.push({ q: total, answer: total.truth.repr, right: true });
  items.push({ q: total, answer: String(Number(total.truth.repr) + 1), right: false });
  items.push({ q: c, answer: c.truth.repr, right: true });
  // A char is judged as a char: its code is a different answer (docs/questions-and-judging.md).
  items.push({ q: c, answer: String(c.truth.repr.charCodeAt(1)), right: false });
  items.push({ q: a, answer: a.truth.repr, right: true });
  items.push({ q: a, answer: a.truth.repr.replace(/\d+(?=\])/, (d: string) => String(Number(d) + 100)), right: false });
  // State answers are `value; type` (the judge's format), the type as lldb names it.
  const verdicts = await judge.judgeBatch(items.map(({ q, answer }) => ({ kind: q.kind, answer: `${answer}; ${q.truth.type}`, truth: q.truth })));
  assert.deepEqual(
    verdicts.map((v) => v.correct),
    items.map((i) => i.right),
    JSON.stringify(verdicts.map((v) => v.reason)),
  );
});

test('types.c: unsigned, double, a 2-D array, a string pointer, a long; a type the answer cannot name is not asked', async () => {
  const trace = await traceViaLldb({ path: path.join(C, 'types.c'), env: ENV, limits: LIMITS });
  const decoded = decodeTrace(trace);
  const last = decoded.locals(trace.steps.filter((s) => s.event === 'line' && s.line === 8)[0]!.i);
  assert.deepEqual(last.u, { repr: '7', type: 'unsigned int', literal: true });
  assert.deepEqual(last.d, { repr: '10.5', type: 'double', literal: true });
  assert.equal(last.grid!.repr, '[[1, 2], [3, 4]]');
  assert.equal(last.grid!.type, 'int[2][2]');
  assert.equal(last.grid!.literal, true);
  assert.deepEqual(last.name, { repr: 'address', type: 'const char *', literal: false });
  assert.deepEqual(last.big, { repr: '5000000000', type: 'long', literal: true });
  assert.deepEqual(trace.outcome, { kind: 'returned', value: { repr: '10', type: 'int', literal: true } });
  const asked = new Set(generateQuestions(trace, { seed: 1, maxState: 200, output: false }).flatMap((q) => (q.kind === 'state' ? [q.var] : [])));
  assert.ok(asked.has('d') && asked.has('grid') && asked.has('big'), [...asked].join(', '));
  assert.ok(!asked.has('name'), 'a pointer is never asked');
  assert.ok(!asked.has('u'), "`unsigned int` cannot be written in the judge's `value; type`");
});

test('--stdin feeds the program; a step limit stops a loop that never ends; nothing is left running', async () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const err = new PassThrough();
  let errText = '';
  err.on('data', (d: Buffer) => (errText += d.toString()));
  const stdinFile = path.join(C, 'echo.input');
  const code = await main(['trace', path.join(C, 'echo.c'), '--entry', 'main', '--via', 'lldb', '--stdin', stdinFile, '--json'], {
    stdout: out,
    stderr: err,
    env: ENV,
    cwd: C,
    signal: new AbortController().signal,
  });
  assert.equal(code, 0, errText);
  const echo = TraceSchema.parse(JSON.parse(text));
  assert.equal(echo.stdin?.text, '3 4\n5\n');
  assert.deepEqual(echo.outcome, { kind: 'returned', value: { repr: '12', type: 'int', literal: true } });
  assert.equal(echo.stdout.text, '12\n');
  // One line event per loop test: the stop after stepping out of scanf is the same line continuing.
  assert.deepEqual(
    echo.steps.filter((s) => s.event === 'line').map((s) => s.line),
    [4, 5, 6, 7, 6, 7, 6, 7, 6, 9, 10, 11],
  );

  const forever = await traceViaLldb({ path: path.join(C, 'forever.c'), env: ENV, limits: { ...LIMITS, steps: 25 } });
  assert.deepEqual(forever.outcome, { kind: 'limit', limit: 'steps', message: 'stopped after 25 steps' });
  assert.equal(forever.steps.length, 25);
  assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), [], 'lldb and the program ended');
});

test('cancelling stops lldb and the program at once; a wall-time limit keeps what was recorded', async () => {
  const ac = new AbortController();
  const run = traceViaLldb({ path: path.join(C, 'forever.c'), env: ENV, limits: { wallTimeMs: 600_000, steps: 1_000_000 } }, ac.signal);
  // Cancel once the program is being stepped (lldb and the debuggee both exist).
  let settled = false;
  run.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled && !leftBehind(`${TMP}/execverify-c-`).some((c) => c.includes(`${TMP}/execverify-c-`))) await new Promise((r) => setTimeout(r, 50));
  assert.equal(settled, false, 'the run was still going when it was cancelled');
  ac.abort();
  await assert.rejects(run, (e: Error & { code?: string }) => e.code === 'cancelled');
  assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), [], 'nothing left behind after a cancel');
  // Out of time while stepping a loop that never ends: the outcome says so, whatever was recorded stands.
  const timed = await traceViaLldb({ path: path.join(C, 'forever.c'), env: ENV, limits: { wallTimeMs: 3000, steps: 1_000_000 } });
  assert.deepEqual(timed.outcome, { kind: 'limit', limit: 'wall_time', message: 'stopped after 3000 ms' });
  TraceSchema.parse(timed);
  assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), [], 'nothing left behind after the wall-time limit');
});

test("cancelling at any moment of the start (before lldb says the program's pid) leaves nothing running", async () => {
  // Cancelled as soon as lldb, then the program, is seen: lldb may not have said the pid yet.
  const started = { lldb: (c: string) => /(?:^|\/)lldb/.test(c), program: (c: string) => c.includes(`${TMP}/execverify-c-`) };
  for (const [what, seen] of Object.entries(started)) {
    const ac = new AbortController();
    const run = traceViaLldb({ path: path.join(C, 'forever.c'), env: ENV, limits: { wallTimeMs: 600_000, steps: 1_000_000 } }, ac.signal);
    let settled = false;
    run.then(
      () => (settled = true),
      () => (settled = true),
    );
    while (!settled && !leftBehind(`${TMP}/execverify-c-`).some(seen)) await new Promise((r) => setImmediate(r));
    ac.abort();
    await assert.rejects(run, (e: Error & { code?: string }) => e.code === 'cancelled');
    assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), [], `nothing left behind after a cancel once ${what} ran`);
  }
});

test('a segfault is a crash naming the signal; exit(n) in main is an exited outcome', async () => {
  const crash = await traceViaLldb({ path: path.join(C, 'crash.c'), env: ENV, limits: LIMITS });
  assert.equal(crash.outcome.kind, 'crashed');
  assert.match((crash.outcome as { message: string }).message, /SIGSEGV/);
  assert.equal((crash.outcome as { signal: string | null }).signal, 'SIGSEGV');
  assert.equal(crash.steps.filter((s) => s.event === 'line').pop()!.line, 8, 'the last line is the faulting store');
  const exits = await traceViaLldb({ path: path.join(C, 'exits.c'), env: ENV, limits: LIMITS });
  assert.deepEqual(exits.outcome, { kind: 'exited', code: 3 });
  assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), []);
});

test("the parent's secrets reach neither lldb nor the program", async () => {
  const trace = await traceViaLldb({ path: path.join(C, 'env.c'), env: { ...ENV, EXECVERIFY_TEST_TOKEN: 'sk-secret' }, limits: LIMITS });
  assert.equal(trace.stdout.text, '(none)\n');
});

test("a compile error is a clear error with gcc's message", async () => {
  const err = new PassThrough();
  let errText = '';
  err.on('data', (d: Buffer) => (errText += d.toString()));
  const code = await main(['trace', path.join(C, 'broken.c'), '--entry', 'main', '--via', 'lldb'], {
    stdout: new PassThrough(),
    stderr: err,
    env: ENV,
    cwd: C,
    signal: new AbortController().signal,
  });
  assert.equal(code, 1);
  assert.match(errText, /gcc -g -O0 failed:[\s\S]*broken\.c/);
  assert.deepEqual(leftBehind(`${TMP}/execverify-c-`), []);
});
