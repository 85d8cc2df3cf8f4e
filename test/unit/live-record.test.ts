// "Record from here" (src/engine/live/record.ts) in a real debugpy session:
// on Python 3.12 our sys.monitoring recorder runs beside debugpy's and records
// the rest of the stopped call exactly as the in-process tracer does; on 3.11
// it is refused with the reason. debugpy is .venv's (pure Python code, so the
// same package runs on 3.12: it is copied beside the test, as the 3.12
// debuggee cannot import .venv's 3.11 site-packages).
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { recordFromHere, RecordRefused } from '../../src/engine/live/record';
import { pythonTracerDir } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import type { Step, Trace, Value } from '../../src/engine/trace/schema';
import { pythonOf } from '../support/pythons';
import { startDebugpySession, type DebugpySession } from '../support/debugpy-session';

const REPO = path.resolve(__dirname, '../..');
const VENV_PYTHON = path.join(REPO, '.venv/bin/python');
const PROGRAM = path.join(REPO, 'test/fixtures/live/record.py');
const BREAK_LINE = 8; // `acc += square(x)`, first stop: x = 1, acc = 0
const tracerDir = pythonTracerDir();

const python312 = () => pythonOf('3.12');

/** A user's debug session stopped at BREAK_LINE. */
const startSession = (python: string, env: NodeJS.ProcessEnv) => startDebugpySession({ python, program: PROGRAM, breakpoints: [BREAK_LINE], env });

/** Each step's event, function, line and the whole locals of its frame after it (set/del applied). */
function states(steps: Step[]): Array<{ event: string; fn: string; line: number; locals: Record<string, Value> }> {
  const frames = new Map<number, Record<string, Value>>();
  return steps.map((s) => {
    const locals = { ...(frames.get(s.frame) ?? {}), ...(s.set ?? {}) };
    for (const name of s.del ?? []) delete locals[name];
    frames.set(s.frame, locals);
    return { event: s.event, fn: s.fn, line: s.line, locals };
  });
}

let work: string;
const sessions: DebugpySession[] = [];

before(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'live-record-'));
  const debugpy = path.join(REPO, '.venv/lib/python3.11/site-packages/debugpy');
  assert.ok(existsSync(debugpy), `debugpy is not in .venv (${debugpy}): run scripts/python-env.sh`);
  cpSync(debugpy, path.join(work, 'debugpy'), { recursive: true });
});

after(async () => {
  for (const s of sessions) await s.close();
  rmSync(work, { recursive: true, force: true });
});

test('on 3.12, record from a stop mid-function: the rest of the call as the in-process tracer records it', async () => {
  const py = python312();
  const session = await startSession(py, { ...process.env, PYTHONPATH: work });
  sessions.push(session);
  // Where the debuggee cannot import our recorder, the adapter's error is the reason; the session goes on.
  await assert.rejects(
    recordFromHere(session.dap, session.threadId, { tracerDir: work }),
    (e: unknown) => e instanceof RecordRefused && /could not start the recorder: .*execverify/.test(e.message),
  );
  const { start, trace } = await recordFromHere(session.dap, session.threadId, { tracerDir });
  assert.equal(start.line, BREAK_LINE);
  assert.notEqual(start.tool, 0, 'debugpy holds DEBUGGER_ID (0); ours is another');
  assert.equal(trace.python?.backend, 'monitoring');
  assert.equal(trace.python?.isolation, 'none');
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, "(14, 'sum=14')");

  const pool = new TracerPool({ python: py, size: 1, env: process.env });
  let reference: Trace;
  try {
    reference = await pool.trace({ path: PROGRAM, entry: { kind: 'call', expr: 'total([1, 2, 3])' } });
  } finally {
    await pool.close();
  }
  const ref = states(reference.steps);
  const from = ref.findIndex((s) => s.event === 'line' && s.fn === 'total' && s.line === BREAK_LINE);
  const got = states(trace.steps);
  // It starts at the stop: a `call` at the current line with every current local.
  assert.deepEqual(got[0], { ...ref[from], event: 'call' });
  assert.deepEqual(Object.keys(got[0].locals).sort(), ['acc', 'x', 'xs']);
  // Then the stopped line's own event (the replay's first stop is where the debugger stood), and every later one as in-process.
  assert.deepEqual(got.slice(1), ref.slice(from));
  // The callees are in it (square(1..3)), recorded across debugpy's second stop at the breakpoint.
  assert.deepEqual(
    got.filter((s) => s.event === 'call' && s.fn === 'square').map((s) => s.locals.n?.repr),
    ['1', '2', '3'],
  );
  assert.deepEqual(trace.outcome, reference.outcome);
});

test('on 3.11, record from here is refused with the reason (debugpy owns the one settrace slot)', async () => {
  const session = await startSession(VENV_PYTHON, process.env);
  sessions.push(session);
  await assert.rejects(recordFromHere(session.dap, session.threadId, { tracerDir }), (e: unknown) => {
    assert.ok(e instanceof RecordRefused);
    assert.equal(
      e.message,
      'recording from a live session needs Python 3.12+ (sys.monitoring); on Python 3.11 there is one settrace slot and the debugger owns it',
    );
    return true;
  });
});
