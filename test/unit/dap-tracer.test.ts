// The DAP tracer through the real debugpy (from .venv, which CI builds with
// python-tracer/requirements-dev.txt): parity with the in-process tracer on
// the fixture programs, exact values past debugpy's display cuts, limits,
// and the errors a user can meet (no debugpy, a syntax error).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { traceViaDebugpy, UNREAD } from '../../src/engine/dap/debugpy-tracer';
import { compareTraces } from '../../src/engine/dap/parity';
import { TracerPool, TracerError } from '../../src/engine/trace/runner';
import { TraceSchema, type Trace } from '../../src/engine/trace/schema';
import { runCli } from '../support/cli';

const REPO = path.resolve(__dirname, '../..');
const PROGRAMS = path.join(REPO, 'test/fixtures/programs');
const PYTHON = path.join(REPO, '.venv/bin/python');
// Both tracers see the same set order.
const ENV = { ...process.env, PYTHONHASHSEED: '0' };
const PARITY = JSON.parse(readFileSync(path.join(PROGRAMS, 'dap-parity.json'), 'utf8')) as Array<{ file: string; entry: string }>;
const LIMITS = { wallTimeMs: 120_000 };

assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run bash scripts/python-env.sh (it installs debugpy)`);
const pool = new TracerPool({ python: PYTHON, size: 1, env: ENV });
after(() => pool.close());

const viaDebugpy = (file: string, expr: string, limits: Record<string, number> = LIMITS) =>
  traceViaDebugpy({ path: file, expr, python: PYTHON, env: ENV, limits });

test('every fixture program: the same executed lines and the same values as the in-process tracer', async () => {
  // Two at a time: most of a DAP trace is waiting on debugpy's round trips.
  const results: Array<{ name: string; parity: ReturnType<typeof compareTraces>; dap: Trace }> = [];
  for (let k = 0; k < PARITY.length; k += 2) {
    const batch = PARITY.slice(k, k + 2);
    results.push(
      ...(await Promise.all(
        batch.map(async ({ file, entry }) => {
          const full = path.join(PROGRAMS, file);
          const [inProcess, dap] = await Promise.all([
            pool.trace({ path: full, entry: { kind: 'call', expr: entry }, limits: LIMITS }),
            viaDebugpy(full, entry),
          ]);
          return { name: `${file} ${entry}`, parity: compareTraces(inProcess, dap), dap };
        }),
      )),
    );
  }
  for (const { name, parity, dap } of results) {
    assert.ok(parity.linesEqual, `${name}: line sequences differ: ${parity.examples.join('; ')}`);
    assert.ok(parity.lines[0] > 0, `${name}: no line events`);
    assert.equal(parity.differ, 0, `${name}: ${parity.differ} of ${parity.values} values differ: ${parity.examples.join('; ')}`);
    assert.ok(parity.values > parity.unread, `${name}: nothing compared`);
    assert.equal(dap.python?.isolation, 'none', 'a debugpy run is not sandboxed, and says so');
  }
  // The one documented difference among these programs: a yield's value is not read.
  const generator = results.find((r) => r.name.startsWith('dbg_generator'))!;
  const yields = generator.dap.steps.filter((s) => s.event === 'return' && s.yielded);
  assert.equal(yields.length, 3);
  for (const y of yields) assert.deepEqual(y.value, UNREAD);
  assert.equal(generator.parity.unread, 3);
  const resumed = generator.dap.steps.filter((s) => s.event === 'call' && s.resumed);
  assert.equal(resumed.length, 3, 'a generator keeps its frame id across yields');
});

test('values debugpy cuts for display (strings in a list past 128 characters) are read exactly', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ev-dap-'));
  const file = path.join(dir, 'long_values.py');
  writeFileSync(file, 'def f(n):\n    xs = ["ab" * n, "c" * (n + 1)]\n    d = {"k": "z" * n}\n    return len(xs[0]) + len(d)\n');
  const dap = await viaDebugpy(file, 'f(150)');
  const inProcess = await pool.trace({ path: file, entry: { kind: 'call', expr: 'f(150)' }, limits: LIMITS });
  const parity = compareTraces(inProcess, dap);
  assert.ok(parity.linesEqual);
  assert.equal(parity.differ, 0, parity.examples.join('; '));
  const xs = dap.steps.find((s) => s.set?.xs)!.set!.xs!;
  assert.equal(xs.repr, `['${'ab'.repeat(150)}', '${'c'.repeat(151)}']`);
  assert.equal(xs.truncated, undefined);
  assert.equal(xs.literal, true);
});

test('the steps limit stops a program that never ends, keeping the steps before it', async () => {
  const dap = await viaDebugpy(path.join(PROGRAMS, 'dbg_forever.py'), 'spin()', { steps: 6, wallTimeMs: 120_000 });
  assert.deepEqual({ kind: dap.outcome.kind, limit: dap.outcome.kind === 'limit' ? dap.outcome.limit : undefined }, { kind: 'limit', limit: 'steps' });
  assert.equal(dap.steps.length, 6);
});

test('the wall-time limit stops it too', async () => {
  const dap = await viaDebugpy(path.join(PROGRAMS, 'dbg_forever.py'), 'spin()', { wallTimeMs: 2000 });
  // How many steps fit in 2 s depends on the machine; that the limit ends the run does not.
  assert.equal(dap.outcome.kind === 'limit' && dap.outcome.limit, 'wall_time');
});

test('cancelling ends the run and its debuggee', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ev-dap-cancel-'));
  const file = path.join(dir, 'spin_until_cancelled.py');
  writeFileSync(file, 'import time\n\n\ndef spin():\n    while True:\n        time.sleep(0.05)\n');
  const controller = new AbortController();
  const running = traceViaDebugpy({ path: file, expr: 'spin()', python: PYTHON, env: ENV, limits: LIMITS }, controller.signal);
  setTimeout(() => controller.abort(), 3000);
  await assert.rejects(running, (err: unknown) => err instanceof TracerError && err.code === 'cancelled');
  // The debuggee (its command line names the file) is gone once the call has settled.
  const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(file));
  assert.deepEqual(left, []);
});

test('an interpreter without debugpy: the error says how to install it', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ev-nodebugpy-'));
  execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(dir, 'venv')]);
  const bare = path.join(dir, 'venv/bin/python');
  await assert.rejects(traceViaDebugpy({ path: path.join(PROGRAMS, 'dbg_loop.py'), expr: 'accumulate(2)', python: bare, env: ENV }), (err: unknown) => {
    assert.ok(err instanceof TracerError);
    assert.equal(err.code, 'debugpy_missing');
    assert.match(err.message, /pip install debugpy/);
    return true;
  });
});

test('a syntax error in the file is a syntax_error, with its line', async () => {
  await assert.rejects(viaDebugpy(path.join(PROGRAMS, 'dbg_syntax_error.py'), 'broken()'), (err: unknown) => {
    assert.ok(err instanceof TracerError);
    assert.equal(err.code, 'syntax_error');
    assert.match(err.message, /line 2/);
    return true;
  });
});

test('execverify trace --via debugpy --json prints a Trace; other debuggers are refused', async () => {
  const run = (...argv: string[]) => runCli(argv, { cwd: PROGRAMS, env: ENV });
  const ok = await run('trace', 'dbg_loop.py', '--entry', 'accumulate(3)', '--via', 'debugpy', '--json', '--python', PYTHON, '--timeout-ms', '120000');
  assert.equal(ok.code, 0, ok.err);
  const trace = TraceSchema.parse(JSON.parse(ok.out));
  assert.deepEqual(trace.outcome, { kind: 'returned', value: { repr: '3', type: 'int', literal: true } });
  const bad = await run('trace', 'dbg_loop.py', '--entry', 'accumulate(3)', '--via', 'gdb');
  assert.notEqual(bad.code, 0);
  assert.match(bad.err, /--via must be debugpy/);
  const script = await run('trace', 'dbg_script.py', '--script', '--via', 'debugpy');
  assert.notEqual(script.code, 0);
  assert.match(script.err, /records a call/);
});
