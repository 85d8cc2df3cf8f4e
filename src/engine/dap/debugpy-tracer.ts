// The DAP tracer for Python: records a Trace by driving debugpy over the
// Debug Adapter Protocol — a breakpoint on the entry call, `stepIn` until the
// call returns, the stack and the stopped frame read at every stop. The
// in-process tracer (trace/runner.ts) stays the road for datasets: this one
// is ~100× slower, and exists so that ground truth can come through a
// debugger (docs/live-debugging.md; parity in docs/trace-format.md).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { pythonTracerDir, workerEnv } from '../python';
import { TracerError } from '../worker/pool';
import { TRACE_SCHEMA_VERSION, type Limits, type Outcome, type Step, type Trace, type Value } from '../trace/schema';
import { safeParseTrace } from '../trace/validate';
import { DapError, type DapClient } from './client';
import { collectOutput, connectAdapter, decodePyRepr, diff, readStop, stopProcessGroup, type DapFrameView } from './stops';

/** One run to record through debugpy: a file and a call expression evaluated in its namespace. */
export interface DebugpyTraceJob {
  /** The Python file; its module body runs unrecorded, as with the in-process tracer. */
  path: string;
  /** The entry call, e.g. `f([1, 2], 3)`. */
  expr: string;
  /** The interpreter that has debugpy installed (the user's). */
  python: string;
  /** The parent environment; only what workerEnv keeps reaches the adapter and the program. */
  env: NodeJS.ProcessEnv;
  /** What the user set for the program (a launch configuration's `env`). */
  programEnv?: Readonly<Record<string, string>>;
  limits?: Limits;
}

/** The in-process tracer's defaults (python-tracer/execverify/recorder.py DEFAULT_LIMITS). */
const DEFAULTS = { steps: 1_000_000, wallTimeMs: 10_000, outputBytes: 1_000_000, reprChars: 1000, containerItems: 32 };

const ENTRY_MODULE = 'execverify.dap_entry';

/**
 * A value the debugger did not give us (a yield's value, a return into code
 * the debugger does not stop in): marked truncated, so no question is asked
 * about it and no verdict is given on it.
 */
export const UNREAD: Value = { repr: '<not read through the debugger>', type: 'unknown', literal: false, truncated: true };

/** debugpy's version and the interpreter's, or a TracerError saying how to get debugpy. */
export function debugpyInfo(python: string, env: NodeJS.ProcessEnv): { debugpy: string; version: string; implementation: string } {
  const probe = spawnSync(
    python,
    ['-c', 'import sys, platform, debugpy; print(debugpy.__version__); print(platform.python_version()); print(sys.implementation.name)'],
    { env: workerEnv(env, pythonTracerDir()), encoding: 'utf8', timeout: 30_000 },
  );
  if (probe.error) throw new TracerError('python_not_found', `cannot run ${python}: ${probe.error.message}`);
  if (probe.status !== 0) {
    throw new TracerError(
      'debugpy_missing',
      `debugpy is not installed for ${python}`,
      `run \`${python} -m pip install debugpy\`, or point --python at an interpreter that has it (the Python Debugger extension ships one)`,
    );
  }
  const [debugpy = '', version = '', implementation = ''] = probe.stdout.trim().split('\n');
  return { debugpy, version, implementation };
}

/** What execverify.dap_entry.exact reads of one stopped frame. */
interface FrameRead {
  locals: Record<string, Value>;
  /** Values returned into this frame by its callees, by debugpy's name for them. */
  returns: Record<string, Value>;
  /** At a return stop: the locals of the callee that is returning. */
  callee?: Record<string, Value>;
  /** co_qualname (co_name before 3.11), as the in-process tracer names frames. */
  fn: string;
  /** co_firstlineno: the line of a starting frame's `call`. */
  first: number;
  generator: boolean;
}

interface OpenFrame {
  id: number;
  /** debugpy's frame id and name: how the frame is found again in the next stop's stack. */
  dapId: number;
  dapName: string;
  fn: string;
  generator: boolean;
  depth: number;
  line: number;
  /** Locals at this frame's last recorded event: name → Value as JSON text, for the diffs. */
  locals: Map<string, string>;
}

/** Records `job` through debugpy; the Trace is validated like the in-process tracer's. */
export async function traceViaDebugpy(job: DebugpyTraceJob, signal?: AbortSignal): Promise<Trace> {
  const started = performance.now();
  // The adapter starts the program from its own directory: a relative interpreter path must not depend on it.
  const python = job.python.includes(path.sep) ? path.resolve(job.python) : job.python;
  const info = debugpyInfo(python, job.env);
  const limits = { ...DEFAULTS, ...job.limits };
  const file = realpathSync(job.path);
  const source = readFileSync(file, 'utf8');
  const tracerDir = pythonTracerDir();
  const entryFile = path.join(tracerDir, 'execverify', 'dap_entry.py');
  const entryLines = readFileSync(entryFile, 'utf8').split('\n');
  const mark = (m: string) => entryLines.findIndex((l) => l.trimEnd().endsWith(m)) + 1;
  const entryLine = mark('# entry');
  const outcomeLine = mark('# outcome');

  const adapter = spawn(python, ['-m', 'debugpy.adapter'], {
    env: workerEnv(job.env, tracerDir, job.programEnv),
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group: stopProcessGroup ends the launcher and the debuggee with it.
    detached: true,
  });
  const { dap, stderrTail: adapterErr } = connectAdapter(adapter);
  const out = collectOutput(dap, limits.outputBytes);

  const steps: Step[] = [];
  const stack: OpenFrame[] = [];
  let nextFrame = 0;
  let outcome: Outcome | undefined;
  let lastUserLine: number | null = null;
  /** An exception is propagating: frames that end now unwind (no value). */
  let raising: { line: number; exc: { type: string; message: string } } | undefined;
  /** Generator frames that yielded, by debugpy id and name: their next push is a resumption. */
  const suspended = new Map<string, OpenFrame>();
  let threadId = 1;
  const deadline = started + limits.wallTimeMs;
  const wallLimit: Outcome = { kind: 'limit', limit: 'wall_time', message: `stopped after ${limits.wallTimeMs} ms` };
  // Cancelled, or out of time while the program runs between two stops: the
  // debuggee is terminated at once, which ends every wait below.
  let halted: 'cancelled' | 'wall_time' | undefined;
  const halt = (why: 'cancelled' | 'wall_time') => {
    if (halted) return;
    halted = why;
    // debugpy does not answer a step it was disconnected in the middle of: every wait ends here.
    const end = () => dap.fail(new Error(why === 'cancelled' ? 'cancelled' : 'out of time'));
    const grace = setTimeout(end, 2000);
    void dap
      .request('disconnect', { terminateDebuggee: true })
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(grace);
        end();
      });
  };
  const onAbort = () => halt('cancelled');
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort);
  const timer = setTimeout(() => halt('wall_time'), limits.wallTimeMs);

  try {
    await dap.request('initialize', {
      clientID: 'execverify',
      adapterID: 'debugpy',
      linesStartAt1: true,
      columnsStartAt1: true,
      pathFormat: 'path',
    } satisfies DebugProtocol.InitializeRequestArguments);
    const initialized = dap.waitFor('initialized');
    const launched = dap.request('launch', {
      request: 'launch',
      type: 'debugpy',
      name: 'execverify trace',
      module: ENTRY_MODULE,
      args: [file, job.expr],
      cwd: path.dirname(file),
      python: [python],
      justMyCode: true,
      showReturnValue: true,
      redirectOutput: true,
      console: 'internalConsole',
    });
    launched.catch(() => undefined); // awaited below; a refusal must not go unhandled meanwhile
    await Promise.race([initialized, launched]);
    await dap.request('setBreakpoints', { source: { path: entryFile }, breakpoints: [{ line: entryLine }, { line: outcomeLine }] });
    // Stops where an exception is raised in the file: its `exception` events, and how an unwinding frame is told apart.
    await dap.request('setExceptionBreakpoints', { filters: ['raised'] });
    await dap.request('configurationDone', {});
    const ended = dap.waitFor('terminated').then(
      () => undefined,
      () => undefined,
    );
    const firstStop = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
    await launched;
    let stop = await Promise.race([firstStop, ended]);
    // Exceptions raised before the entry call (in the module body, or its syntax check) are not ours to stop at.
    while (stop && stop.body.reason === 'exception') {
      const next = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
      await dap.request('continue', { threadId: stop.body.threadId ?? 1 });
      stop = await Promise.race([next, ended]);
    }
    if (!stop) {
      if (halted) throw new Error('halted'); // ends the try: nothing was recorded
      const syntax = /execverify\.dap_entry: syntax_error: (.*)/.exec(out.stderr);
      if (syntax) throw new TracerError('syntax_error', syntax[1]!);
      const why = (out.stderr || adapterErr()).trim().slice(-2000);
      throw new TracerError('bad_entry', `the program ended before the entry call ran${why ? `:\n${why}` : ''}`);
    }
    threadId = stop.body.threadId ?? 1;
    const step = async (command: 'stepIn' | 'continue') => {
      const next = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
      await dap.request(command, { threadId });
      return Promise.race([next, ended]);
    };

    // At the breakpoint on the entry call: step into it.
    let next = await step('stepIn');
    for (;;) {
      if (halted) break;
      if (!next) {
        outcome = { kind: 'crashed', message: 'the program ended before the entry call returned', exitCode: null, signal: null };
        break;
      }
      if (performance.now() > deadline) {
        outcome = wallLimit;
        break;
      }
      const view = await readStop(dap, threadId);
      const top = view.frames[0];
      if (top?.path === entryFile) {
        // Back in dap_entry: the call is over; its outcome is read at the `# outcome` line.
        if (top.line !== outcomeLine) {
          next = await step('continue');
          continue;
        }
        outcome = await readOutcome(dap, top.id, raising?.line ?? lastUserLine, limits);
        // The entry frame's own return: the value the call returned, or none when it raised.
        while (stack.length > 0) popFrame(outcome.kind === 'returned' && stack.length === 1 ? outcome.value : undefined);
        break;
      }
      if (top?.path === file) {
        if (steps.length >= limits.steps) {
          outcome = { kind: 'limit', limit: 'steps', message: `stopped after ${limits.steps} steps` };
          break;
        }
        const user = view.frames.filter((f) => f.path === file).reverse();
        if (!(next.body.reason === 'exception' && (await recordException(user)))) await recordStop(user);
        lastUserLine = top.line;
      }
      // Code of other files the debugger stops in is stepped through, unrecorded.
      next = await step('stepIn');
    }
  } catch (err) {
    if (!halted) {
      if (err instanceof TracerError) throw err;
      if (err instanceof DapError) throw new TracerError('worker_crashed', `debugpy: ${err.message}`);
      throw err;
    }
    // A request cut short by halt(): what was recorded before it stands.
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    await Promise.race([dap.request('disconnect', { terminateDebuggee: true }).catch(() => undefined), new Promise((r) => setTimeout(r, 2000))]);
    await stopProcessGroup(adapter);
  }

  if (halted === 'cancelled') throw new TracerError('cancelled', 'cancelled');
  if (halted === 'wall_time') outcome = wallLimit;
  const trace = {
    schema: TRACE_SCHEMA_VERSION,
    python: {
      version: info.version,
      implementation: info.implementation,
      // debugpy's own hook: sys.monitoring from 3.12, sys.settrace before.
      backend: versionAtLeast(info.version, 3, 12) ? ('monitoring' as const) : ('settrace' as const),
      // The program ran under the debugger, not in the OS sandbox.
      isolation: 'none' as const,
    },
    entry: { kind: 'call' as const, expr: job.expr },
    files: [{ path: file, source }],
    steps,
    outcome,
    stdout: { text: out.stdout, truncated: out.stdoutCut },
    stderr: { text: out.stderr, truncated: out.stderrCut },
    stats: { events: steps.length, wallMs: performance.now() - started },
  };
  const parsed = safeParseTrace(trace);
  if (!parsed.ok) throw new TracerError('invalid_trace', `the debugpy trace does not match ${TRACE_SCHEMA_VERSION}: ${parsed.error}`);
  return parsed.trace;

  /** Reads a stopped frame exactly (execverify.dap_entry.exact, evaluated in it). */
  async function read(frameId: number): Promise<FrameRead> {
    const expression = `__import__('${ENTRY_MODULE}', fromlist=['exact']).exact(${limits.reprChars}, ${limits.containerItems})`;
    const r = await dap.request<DebugProtocol.EvaluateResponse['body']>('evaluate', { expression, frameId, context: 'clipboard' });
    const got = JSON.parse(decodePyRepr(r.result)) as FrameRead | { error: string };
    if ('error' in got) throw new TracerError('tracer_internal', `reading a stopped frame: ${got.error}`);
    return got;
  }

  /**
   * One stop in the file (`user`: its frames, outermost first): the frames
   * that ended, the frames that began, and the line about to run.
   */
  async function recordStop(user: DapFrameView[]): Promise<void> {
    let common = 0;
    while (common < stack.length && common < user.length && stack[common]!.dapId === user[common]!.id && stack[common]!.dapName === user[common]!.name) {
      common++;
    }
    const popped = stack.length - common;
    const topUser = user[user.length - 1]!;
    // debugpy stops in the caller, on the call's line, right after a callee
    // returns: that stop is the callee's `return`, not a new line event.
    const returnStop = popped === 1 && common === user.length && stack[common - 1]!.line === topUser.line;
    if (popped > 0) {
      const caller = returnStop && !raising ? await read(topUser.id) : undefined;
      for (let k = 0; k < popped; k++) {
        const closing = stack[stack.length - 1]!;
        if (raising) popFrame(undefined);
        else if (caller) popFrame(returnedValue(caller.returns, closing.fn) ?? UNREAD, false, caller.callee && diff(closing.locals, caller.callee));
        else if (closing.generator) {
          // debugpy does not stop in the consumer after a yield: the yielded value is not read.
          suspended.set(`${closing.dapId}:${closing.dapName}`, closing);
          popFrame(UNREAD, true);
        } else popFrame(UNREAD);
      }
    }
    if (returnStop) {
      if (raising) {
        // The exception propagates into the caller, on the line of the call.
        const frame = stack[stack.length - 1]!;
        steps.push({ i: steps.length, event: 'exception', frame: frame.id, fn: frame.fn, file: 0, line: frame.line, depth: frame.depth, exc: raising.exc });
      }
      return;
    }
    raising = undefined;
    for (let k = common; k < user.length; k++) {
      const f = user[k]!;
      const got = await read(f.id);
      const parent = stack.length > 0 ? stack[stack.length - 1]!.id : null;
      const resumed = suspended.get(`${f.id}:${f.name}`);
      if (resumed && resumed.depth === k && resumed.fn === got.fn) {
        suspended.delete(`${f.id}:${f.name}`);
        steps.push({
          i: steps.length,
          event: 'call',
          frame: resumed.id,
          parent,
          fn: got.fn,
          file: 0,
          line: resumed.line,
          depth: k,
          resumed: true,
          ...diff(resumed.locals, got.locals),
        });
        stack.push(resumed);
        continue;
      }
      const frame: OpenFrame = {
        id: nextFrame++,
        dapId: f.id,
        dapName: f.name,
        fn: got.fn,
        generator: got.generator,
        depth: k,
        line: f.line,
        locals: new Map(),
      };
      steps.push({
        i: steps.length,
        event: 'call',
        frame: frame.id,
        parent,
        fn: got.fn,
        file: 0,
        line: got.first,
        depth: k,
        ...diff(frame.locals, got.locals),
      });
      stack.push(frame);
    }
    const frame = stack[stack.length - 1]!;
    // A frame that just began was read above; one that went on is read now.
    const change = common === user.length ? diff(frame.locals, (await read(topUser.id)).locals) : {};
    frame.line = topUser.line;
    steps.push({ i: steps.length, event: 'line', frame: frame.id, fn: frame.fn, file: 0, line: topUser.line, depth: frame.depth, ...change });
  }

  /**
   * An `exception` stop: an `exception` event for the frame it was raised in.
   * False when the stop is not at that frame's current line (then it is an
   * ordinary stop).
   */
  async function recordException(user: DapFrameView[]): Promise<boolean> {
    const frame = stack[stack.length - 1];
    const topUser = user[user.length - 1];
    if (!frame || !topUser || user.length !== stack.length || frame.dapId !== topUser.id || frame.line !== topUser.line) return false;
    const last = steps[steps.length - 1];
    // Already recorded: the exception came into this frame from its callee (recordStop).
    if (raising && last?.event === 'exception' && last.frame === frame.id) return true;
    const info = await dap.request<DebugProtocol.ExceptionInfoResponse['body']>('exceptionInfo', { threadId });
    const exc = { type: shortName(info.exceptionId), message: info.description ?? '' };
    const change = diff(frame.locals, (await read(topUser.id)).locals);
    steps.push({ i: steps.length, event: 'exception', frame: frame.id, fn: frame.fn, file: 0, line: frame.line, depth: frame.depth, ...change, exc });
    raising = { line: raising?.line ?? frame.line, exc };
    return true;
  }

  function popFrame(value: Value | undefined, yielded = false, change: ReturnType<typeof diff> = {}): void {
    const f = stack.pop()!;
    steps.push({
      i: steps.length,
      event: 'return',
      frame: f.id,
      fn: f.fn,
      file: 0,
      line: f.line,
      depth: f.depth,
      ...change,
      ...(value ? { value } : {}),
      ...(yielded ? { yielded: true } : {}),
    });
  }
}

/** The entry's outcome, read at dap_entry's `# outcome` line. */
async function readOutcome(dap: DapClient, frameId: number, line: number | null, lim: { reprChars: number; containerItems: number }): Promise<Outcome> {
  const expression = `__import__('${ENTRY_MODULE}', fromlist=['outcome_json']).outcome_json(outcome, ${lim.reprChars}, ${lim.containerItems})`;
  const r = await dap.request<DebugProtocol.EvaluateResponse['body']>('evaluate', { expression, frameId, context: 'clipboard' });
  const o = JSON.parse(decodePyRepr(r.result)) as { kind: 'returned'; value: Value } | { kind: 'raised'; type: string; message: string };
  return o.kind === 'returned' ? o : { kind: 'raised', type: o.type, message: o.message, line, file: line === null ? null : 0 };
}

/** debugpy names a return value `Class.name` for a method, `name` otherwise; frames go by co_qualname. */
function returnedValue(returns: Record<string, Value>, fn: string): Value | undefined {
  const short = shortName(fn);
  if (returns[fn]) return returns[fn];
  if (returns[short]) return returns[short];
  const key = Object.keys(returns).find((k) => shortName(k) === short);
  return key === undefined ? undefined : returns[key];
}

function shortName(name: string): string {
  return name.slice(name.lastIndexOf('.') + 1);
}

function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}
