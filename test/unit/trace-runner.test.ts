// The TracerPool against real Python workers: traces, typed errors,
// cancellation, bad programs, restarts, concurrency.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TracerPool, TracerError } from '../../src/engine/trace/runner';
import { TraceSchema, TRACE_SCHEMA_VERSION } from '../../src/engine/trace/schema';
import { pythonTracerDir, resolvePython } from '../../src/engine/python';

const dir = mkdtempSync(join(tmpdir(), 'ev-runner-'));
function file(name: string, source: string): string {
  const p = join(dir, name);
  writeFileSync(p, source);
  return p;
}
const SUM = file('sum.py', 'def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n');

const pool = new TracerPool({ size: 2 });
after(() => pool.close());

async function rejects(p: Promise<unknown>, code: string): Promise<TracerError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof TracerError, `expected a TracerError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected a TracerError '${code}'`);
}

test('traces a call entry into a schema-valid trace', async () => {
  const trace = await pool.trace({ path: SUM, entry: { kind: 'call', expr: 'f([1, 2, 3])' } });
  assert.equal(trace.schema, TRACE_SCHEMA_VERSION);
  TraceSchema.parse(trace);
  assert.deepEqual(trace.outcome, { kind: 'returned', value: { repr: '6', type: 'int', literal: true } });
  assert.deepEqual(
    trace.steps.map((s) => [s.event, s.line]),
    [
      ['call', 1],
      ['line', 2],
      ['line', 3],
      ['line', 4],
      ['line', 3],
      ['line', 4],
      ['line', 3],
      ['line', 4],
      ['line', 3],
      ['line', 5],
      ['return', 5],
    ],
  );
  assert.equal(trace.files[0]!.path, SUM);
});

test('traces source text without a file', async () => {
  const trace = await pool.trace({ source: 'def g(a):\n    return a * 2\n', entry: { kind: 'call', expr: 'g("ab")' } });
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, "'abab'");
});

test('a script entry runs as __main__ with its arguments', async () => {
  const p = file('script.py', 'import sys\nprint(sys.argv[1:])\nif __name__ == "__main__":\n    sys.exit(3)\n');
  const trace = await pool.trace({ path: p, entry: { kind: 'script', args: ['a', 'b'] } });
  assert.deepEqual(trace.outcome, { kind: 'exited', code: 3 });
  assert.equal(trace.stdout.text, "['a', 'b']\n");
});

test('a module:function entry imports the module from cwd', async () => {
  const pkg = mkdtempSync(join(tmpdir(), 'ev-pkg-'));
  writeFileSync(join(pkg, 'mathy.py'), 'def double(x):\n    y = x * 2\n    return y\n');
  const trace = await pool.trace({ cwd: pkg, entry: { kind: 'function', target: 'mathy:double', args: '21' } });
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, '42');
  assert.ok(trace.files[0]!.path.endsWith('mathy.py'));
  assert.deepEqual(
    trace.steps.filter((s) => s.event === 'line').map((s) => s.line),
    [2, 3],
  );
});

test('syntax errors, missing files and bad entries are typed errors with a next step', async () => {
  const bad = file('bad.py', 'def f(:\n    pass\n');
  const e1 = await rejects(pool.trace({ path: bad, entry: { kind: 'call', expr: 'f()' } }), 'syntax_error');
  assert.match(e1.message, /line 1/);
  assert.ok(e1.hint.length > 0);
  await rejects(pool.trace({ path: join(dir, 'nope.py'), entry: { kind: 'call', expr: 'f()' } }), 'file_not_found');
  await rejects(pool.trace({ path: SUM, entry: { kind: 'call', expr: 'f(' } }), 'bad_entry');
  await rejects(pool.trace({ path: SUM, entry: { kind: 'function', target: 'no-colon', args: '' } }), 'bad_entry');
});

test('an unknown op is a typed error and the worker stays usable', async () => {
  await rejects(pool.request('no_such_op'), 'unknown_op');
  const pong = (await pool.request('ping')) as { pong: boolean };
  assert.equal(pong.pong, true);
});

test('bad programs get their own outcome and the next job is right', async () => {
  const exit = file('exit.py', 'import os\ndef f():\n    x = 1\n    os._exit(7)\n');
  const t1 = await pool.trace({ path: exit, entry: { kind: 'call', expr: 'f()' } });
  assert.equal(t1.outcome.kind, 'crashed');
  assert.equal(t1.outcome.kind === 'crashed' && t1.outcome.exitCode, 7);
  const loop = file('loop.py', 'def f():\n    while True:\n        pass\n');
  const t2 = await pool.trace({ path: loop, entry: { kind: 'call', expr: 'f()' }, limits: { steps: 100 } });
  assert.deepEqual([t2.outcome.kind, t2.outcome.kind === 'limit' && t2.outcome.limit], ['limit', 'steps']);
  assert.equal(t2.steps.length, 100);
  const t3 = await pool.trace({ path: SUM, entry: { kind: 'call', expr: 'f([5])' } });
  assert.equal(t3.outcome.kind === 'returned' && t3.outcome.value.repr, '5');
});

test('an AbortSignal cancels a running job; the pool goes on', async () => {
  const hang = file('hang.py', 'import time\ndef f():\n    time.sleep(30)\n');
  const ctl = new AbortController();
  const running = pool.trace({ path: hang, entry: { kind: 'call', expr: 'f()' } }, ctl.signal);
  setTimeout(() => ctl.abort(), 300);
  await rejects(running, 'cancelled');
  const next = await pool.trace({ path: SUM, entry: { kind: 'call', expr: 'f([1, 1])' } });
  assert.equal(next.outcome.kind === 'returned' && next.outcome.value.repr, '2');
});

test('an already aborted signal never starts the job', async () => {
  const ctl = new AbortController();
  ctl.abort();
  await rejects(pool.trace({ path: SUM, entry: { kind: 'call', expr: 'f([])' } }, ctl.signal), 'cancelled');
});

test('jobs queue beyond the pool size and all complete correctly', async () => {
  const results = await Promise.all(Array.from({ length: 7 }, (_, i) => pool.trace({ path: SUM, entry: { kind: 'call', expr: `f(range(${i}))` } })));
  assert.deepEqual(
    results.map((t) => (t.outcome.kind === 'returned' ? t.outcome.value.repr : '?')),
    [0, 1, 2, 3, 4, 5, 6].map((i) => String((i * (i - 1)) / 2)),
  );
  assert.ok(pool.running <= 2);
});

test('a worker that dies is replaced for the next job', async () => {
  const { pool: own, spawned } = spyingPool(1);
  try {
    await own.request('ping');
    const worker = spawned[0]!;
    process.kill(worker.pid!, 'SIGKILL'); // the worker's sandbox, from outside
    // its exit heard (the pool's listener runs first), however slow the machine
    assert.ok(await until(() => worker.signalCode !== null, 60_000));
    const t = await own.trace({ path: SUM, entry: { kind: 'call', expr: 'f([2])' } });
    assert.equal(t.outcome.kind === 'returned' && t.outcome.value.repr, '2');
    assert.equal(spawned.length, 2);
  } finally {
    await own.close();
  }
});

/** A pool whose spawns are kept: their pids are the workers' sandboxes as the host sees them. */
/**
 * A pool whose spawns are recorded: the processes, their arguments, and
 * the trace_batch requests written to each (`batches[w]`: worker w's
 * batches in order, each its jobs' entry expressions).
 */
function spyingPool(size: number): { pool: TracerPool; spawned: ChildProcess[]; args: string[][]; batches: string[][][] } {
  const spawned: ChildProcess[] = [];
  const args: string[][] = [];
  const batches: string[][][] = [];
  const pool = new TracerPool({
    size,
    spawn: (command, a, options) => {
      args.push(a);
      const child = spawn(command, a, options);
      spawned.push(child);
      const mine: string[][] = [];
      batches.push(mine);
      const stdin = child.stdin!;
      const write = stdin.write.bind(stdin) as (chunk: string) => boolean;
      stdin.write = ((chunk: string) => {
        const req = JSON.parse(chunk) as { op: string; jobs?: Array<{ entry: { expr: string } }> };
        if (req.op === 'trace_batch') mine.push(req.jobs!.map((j) => j.entry.expr));
        return write(chunk);
      }) as typeof stdin.write;
      return child;
    },
  });
  return { pool, spawned, args, batches };
}

test('a missing interpreter is python_not_found with what to do', async () => {
  const own = new TracerPool({ python: '/nonexistent/python3', size: 1 });
  try {
    const err = await rejects(own.trace({ path: SUM, entry: { kind: 'call', expr: 'f([])' } }), 'python_not_found');
    assert.match(err.message, /EXECVERIFY_PYTHON|pythonPath/);
  } finally {
    await own.close();
  }
});

test('close() fails queued work with closed', async () => {
  const own = new TracerPool({ size: 1 });
  const slow = file('slow.py', 'import time\ndef f():\n    time.sleep(5)\n');
  const a = rejects(own.trace({ path: slow, entry: { kind: 'call', expr: 'f()' } }), 'closed');
  const b = rejects(own.trace({ path: SUM, entry: { kind: 'call', expr: 'f([])' } }), 'closed');
  await new Promise((r) => setTimeout(r, 300));
  await own.close();
  await a;
  await b;
  await rejects(own.request('ping'), 'closed');
});

test('resolvePython: setting, then EXECVERIFY_PYTHON, then python3', () => {
  assert.equal(resolvePython('/opt/py', { EXECVERIFY_PYTHON: '/env/py' }), '/opt/py');
  assert.equal(resolvePython(undefined, { EXECVERIFY_PYTHON: '/env/py' }), '/env/py');
  assert.equal(resolvePython('  ', { EXECVERIFY_PYTHON: '' }), 'python3');
});

test('pythonTracerDir is found from src/, dist/ and an installed layout', () => {
  const here = pythonTracerDir(__dirname);
  assert.ok(here.endsWith('python-tracer'));
  const fake = new Set(['/ext/python-tracer/execverify/worker.py']);
  assert.equal(
    pythonTracerDir('/ext/dist', (p) => fake.has(p)),
    '/ext/python-tracer',
  );
  assert.throws(() => pythonTracerDir('/elsewhere/dist', () => false), /python-tracer\/ not found/);
});

test('traceMany returns one result per job, in order, errors in place', async () => {
  const crash = 'import os\ndef f():\n    os._exit(2)\n';
  const results = await pool.traceMany(
    [
      { path: SUM, entry: { kind: 'call', expr: 'f([1])' } },
      { source: 'def f(:\n', entry: { kind: 'call', expr: 'f()' } },
      { source: crash, entry: { kind: 'call', expr: 'f()' } },
      ...Array.from({ length: 20 }, (_, i) => ({ path: SUM, entry: { kind: 'call' as const, expr: `f(range(${i}))` } })),
      { path: SUM, entry: { kind: 'call', expr: 'f(' } },
    ],
    undefined,
    4,
  );
  assert.equal(results.length, 24);
  const first = results[0]!;
  assert.ok(!(first instanceof Error) && first.outcome.kind === 'returned' && first.outcome.value.repr === '1');
  assert.ok(results[1] instanceof TracerError && results[1].code === 'syntax_error');
  const crashed = results[2]!;
  assert.ok(!(crashed instanceof Error) && crashed.outcome.kind === 'crashed');
  for (let i = 0; i < 20; i++) {
    const t = results[3 + i]!;
    assert.ok(!(t instanceof Error), String(t));
    assert.equal(t.outcome.kind === 'returned' && t.outcome.value.repr, String((i * (i - 1)) / 2));
  }
  assert.ok(results[23] instanceof TracerError && results[23].code === 'bad_entry');
});

// traceMany pipelines: a busy worker already holds its next batch, so it
// never waits a round trip between batches. These pin down what happens to
// that waiting batch when the worker dies or a batch is cancelled.
function sumJobs(n: number, from = 0) {
  return Array.from({ length: n }, (_, i) => ({ path: SUM, entry: { kind: 'call' as const, expr: `f(range(${from + i}))` } }));
}
function sums(results: Array<unknown>, from = 0): void {
  results.forEach((t, i) => {
    assert.ok(!(t instanceof Error), String(t));
    const r = t as { outcome: { kind: string; value?: { repr: string } } };
    const k = from + i;
    assert.equal(r.outcome.kind === 'returned' && r.outcome.value?.repr, String((k * (k - 1)) / 2));
  });
}

test('traceMany: a batch whose answer is longer than maxAnswerBytes is traced job by job; one trace too long is answer_too_large', async () => {
  const one = new TracerPool({ size: 1 });
  try {
    const job = (n: number) => ({ path: SUM, entry: { kind: 'call' as const, expr: `f(list(range(${n})))` } });
    const alone = await one.trace(job(40));
    const size = JSON.stringify(alone).length;
    // Four such traces in one answer are over the bound, each alone is under it.
    const small = new TracerPool({ size: 1, maxAnswerBytes: Math.ceil(size * 1.5) });
    try {
      const got = await small.traceMany([job(40), job(41), job(42), job(40)]);
      for (const [i, t] of got.entries()) assert.ok(!(t instanceof Error), `job ${i}: ${String(t)}`);
      const traces = got as Exclude<(typeof got)[number], TracerError>[];
      assert.deepEqual(
        traces.map((t) => t.outcome),
        [780, 820, 861, 780].map((n) => ({ kind: 'returned', value: { repr: String(n), type: 'int', literal: true } })),
      );
      assert.deepEqual(traces[0]!.steps, alone.steps);
      // One trace longer than the bound: a clear error, and the worker goes on.
      const [big] = await small.traceMany([job(400)]);
      assert.ok(big instanceof TracerError && big.code === 'answer_too_large', String(big));
      assert.match(big.message, /bytes, more than/);
      assert.deepEqual((await small.trace(job(40))).steps, alone.steps);
    } finally {
      await small.close();
    }
  } finally {
    await one.close();
  }
});

// A trace from a shared child goes to the pool unread, framed by its length
// (python-tracer/execverify/tracer.py _assemble, worker.py Frames). No
// program that passes the shareable check can write to its pipe, so a relay
// between the pool and a real worker does it here: it makes the second
// frame carry the third job's trace as well, as a forger reaching into its
// neighbour's entry would.
const SPOIL = [
  'import json, subprocess, sys',
  'w = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)',
  'for line in iter(w.stdout.readline, b""):',
  '    answer = json.loads(line)',
  '    frames = [w.stdout.read(n) for n in answer.get("frames", [])]',
  '    if len(frames) == 3:',
  '        frames[1] += b"," + frames[2]',
  '        answer["frames"] = [len(f) for f in frames]',
  '    sys.stdout.buffer.write(json.dumps(answer).encode() + b"\\n" + b"".join(frames))',
  '    sys.stdout.buffer.flush()',
].join('\n');

test('traceMany: a frame that is not one JSON value fails its own job, and no other', async () => {
  const own = new TracerPool({ size: 1, spawn: (command, a, options) => spawn(command, ['-c', SPOIL, command, ...a], options) });
  try {
    const [first, spoiled, third] = await own.traceMany(sumJobs(3, 4));
    sums([first], 4);
    sums([third], 6);
    assert.ok(spoiled instanceof TracerError && spoiled.code === 'tampered', String(spoiled));
    assert.match(spoiled.message, /not one JSON value/);
    sums(await own.traceMany(sumJobs(2, 7)), 7); // in step with the worker after it
  } finally {
    await own.close();
  }
});

test('traceMany: as few batches as equal shares allow, none over batchSize, each every k-th job', async () => {
  const { pool: own, batches: perWorker } = spyingPool(2);
  const batches = () => perWorker.flat();
  try {
    const jobs = sumJobs(10);
    sums(await own.traceMany(jobs, undefined, 3));
    // ceil(10 / 3) = 4 batches (a multiple of the 2 workers), sizes 3, 3, 2, 2
    const expr = (ks: number[]) => ks.map((k) => jobs[k]!.entry.expr);
    assert.deepEqual(
      batches().sort((x, y) => x[0]!.localeCompare(y[0]!)),
      [expr([0, 4, 8]), expr([1, 5, 9]), expr([2, 6]), expr([3, 7])].sort((x, y) => x[0]!.localeCompare(y[0]!)),
    );
    // 5 jobs within one batch's size: one batch per worker (3 and 2 more)
    sums(await own.traceMany(jobs.slice(0, 5)));
    assert.deepEqual(
      batches()
        .map((b) => b.length)
        .sort(),
      [2, 2, 2, 3, 3, 3],
    );
  } finally {
    await own.close();
  }
});

test('traceMany: the last batches wait for whichever worker frees first, none behind a busy one', async () => {
  // Which jobs each worker was given, as they are written to it.
  const { pool: own, batches } = spyingPool(2);
  try {
    // Five batches of one; the third sleeps. It waits behind one of the
    // first two, on that worker, while the other takes the fourth; the
    // fifth, one of the last two, is left for whichever worker frees first:
    // the other one, long before the sleep ends. Queued behind the sleeping
    // batch, it would wait out the sleep while a worker idled.
    const slow = { source: 'import time\ndef f():\n    time.sleep(3)\n    return 1\n', entry: { kind: 'call' as const, expr: 'f()' } };
    const [f1, f2, f4, f5] = sumJobs(4);
    const results = await own.traceMany([f1!, f2!, slow, f4!, f5!], undefined, 1);
    sums([results[0], results[1], results[3], results[4]], 0);
    const sleeper = batches.map((b) => b.flat()).find((g) => g.includes('f()'))!;
    assert.equal(sleeper.length, 2, `the sleeping batch's worker was given ${JSON.stringify(sleeper)}`);
    assert.equal(sleeper[1], 'f()');
  } finally {
    await own.close();
  }
});

test('traceMany: a batch waiting behind one whose worker dies runs on the next worker', async () => {
  const { pool: own, spawned } = spyingPool(1);
  try {
    await own.request('ping');
    // the first batch sleeps in a fresh fork; the kill lands while it runs,
    // with the second batch already written behind it
    const slow = { source: 'import time\ndef f():\n    time.sleep(1)\n    return 1\n', entry: { kind: 'call' as const, expr: 'f()' } };
    // Two batches of four, each every other job: the slow one's (jobs 0, 2,
    // 4, 6) and the one behind it (1, 3, 5, 7).
    const jobs = [slow, ...sumJobs(7)];
    const done = own.traceMany(jobs, undefined, 4);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(spawned[0]!.pid!, 'SIGKILL');
    const results = await done;
    for (const k of [0, 2, 4, 6]) assert.ok(results[k] instanceof TracerError && results[k].code === 'worker_crashed', `job ${k}: ${String(results[k])}`);
    for (const k of [1, 3, 5, 7]) sums([results[k]], k - 1);
  } finally {
    await own.close();
  }
});

test('traceMany: cancelling stops the running and the waiting batch, and the pool goes on', async () => {
  const own = new TracerPool({ size: 1 });
  try {
    const hang = { source: 'import time\ndef f():\n    time.sleep(30)\n', entry: { kind: 'call' as const, expr: 'f()' } };
    const ctl = new AbortController();
    const done = own.traceMany([hang, ...sumJobs(3), ...sumJobs(4)], ctl.signal, 4);
    setTimeout(() => ctl.abort(), 300);
    const results = await done;
    for (const r of results) assert.ok(r instanceof TracerError && r.code === 'cancelled', String(r));
    sums(await own.traceMany(sumJobs(9), undefined, 3));
  } finally {
    await own.close();
  }
});

test('traceMany keeps every worker fed: more batches than workers all complete in order', async () => {
  sums(await pool.traceMany(sumJobs(40), undefined, 3));
});

/** Whether pid still runs (not gone, not a zombie awaiting its reaper). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}
async function until(check: () => boolean, ms = 5000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (check()) return true;
  return check();
}

test('each worker is a spawn of its own (one sandbox each), leading its own process group', async () => {
  const { pool: own, spawned, args } = spyingPool(3);
  try {
    sums(await own.traceMany(sumJobs(12), undefined, 2));
    assert.equal(spawned.length, 3);
    for (const a of args) assert.ok(!a.includes('--siblings'), a.join(' '));
    const pids = spawned.map((c) => c.pid!);
    assert.equal(new Set(pids).size, 3, pids.join(' '));
    for (const pid of pids) assert.equal(Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]), pid);
  } finally {
    await own.close();
  }
});

test('cancelling jobs kills each worker (and its job), and the pool goes on', async () => {
  const { pool: own, spawned } = spyingPool(2);
  try {
    sums(await own.traceMany(sumJobs(4), undefined, 1)); // both workers started
    const pids = spawned.map((c) => c.pid!);
    const hang = {
      source: 'def f():\n    while True:\n        pass\n',
      entry: { kind: 'call' as const, expr: 'f()' },
      limits: { wallTimeMs: 60_000, cpuTimeMs: 60_000, steps: 100_000_000, traceBytes: 2 ** 31 }, // no limit within reach, however fast
    };
    const ctls = [new AbortController(), new AbortController()];
    const runs = ctls.map((c) => rejects(own.trace(hang, c.signal), 'cancelled'));
    await new Promise((r) => setTimeout(r, 300));
    for (const c of ctls) c.abort();
    await Promise.all(runs);
    assert.ok(await until(() => pids.every((p) => !running(p))), `still running: ${pids.filter(running).join(' ')}`);
    sums(await own.traceMany(sumJobs(6), undefined, 2));
    assert.equal(spawned.length, 4);
  } finally {
    await own.close();
  }
});

test('closing a pool ends its workers', async () => {
  const { pool: own, spawned } = spyingPool(3);
  sums(await own.traceMany(sumJobs(6), undefined, 2));
  const pids = spawned.map((c) => c.pid!);
  await own.close();
  assert.ok(await until(() => pids.every((p) => !running(p))), `still running: ${pids.filter(running).join(' ')}`);
});

test('a missing interpreter fails every batch of a multi-worker pool with python_not_found', async () => {
  const own = new TracerPool({ python: '/nonexistent/python3', size: 3 });
  try {
    const results = await own.traceMany(sumJobs(6), undefined, 2);
    for (const r of results) assert.ok(r instanceof TracerError && r.code === 'python_not_found', String(r));
  } finally {
    await own.close();
  }
});
