// The DAP tracer for C: compiles the program with `gcc -g -O0`, drives lldb's
// debug adapter (lldb-dap, `lldb-vscode-14` on Debian 12) over DAP — a
// breakpoint on `main`, `stepIn` until main returns, `stepOut` of any frame
// outside the file (libc) — and reads the stack and the locals at every stop.
// The locals are what the debugger shows, typed (lldb-values.ts); the Trace
// has `language: 'c'` and `runtime` in place of `python` (docs/live-debugging.md).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { codeEnv } from '../child-env';
import { TracerError } from '../worker/pool';
import { TRACE_SCHEMA_VERSION, type Limits, type Outcome, type Step, type Trace, type Value } from '../trace/schema';
import { safeParseTrace } from '../trace/validate';
import { DapError } from './client';
import { collectOutput, connectAdapter, diff, readStop, stopProcessGroup, type DapFrameView } from './stops';
import { UNREAD } from './debugpy-tracer';
import { declaredBefore, readLldbLocals, type Declaration } from './lldb-values';

/** One C program to record: its `main` is stepped through from its first line to its return. */
export interface LldbTraceJob {
  /** The C source file (one translation unit). */
  path: string;
  /** The parent environment; only what codeEnv keeps reaches gcc, lldb and the program. */
  env: NodeJS.ProcessEnv;
  /** The program's standard input; absent: /dev/null (a read sees end of file). */
  stdin?: string;
  /** The standard input's file, when it came from one (else it is written to a temporary file). */
  stdinPath?: string;
  /** The debug adapter; default: the first of LLDB_DAP_NAMES on PATH. */
  adapter?: string;
  limits?: Limits;
}

/** lldb's DAP server, by the names Debian and LLVM have shipped it under (newest first). */
export const LLDB_DAP_NAMES = ['lldb-dap', 'lldb-dap-19', 'lldb-dap-18', 'lldb-vscode', 'lldb-vscode-16', 'lldb-vscode-15', 'lldb-vscode-14'];

const DEFAULTS = { steps: 100_000, wallTimeMs: 10_000, outputBytes: 1_000_000, containerItems: 32 };

/** The adapter binary on PATH, or a TracerError saying how to get one. */
export function findLldbDap(env: NodeJS.ProcessEnv, given?: string): string {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of given ? [given] : LLDB_DAP_NAMES) {
    if (name.includes(path.sep)) return name;
    for (const dir of dirs) {
      const full = path.join(dir, name);
      const probe = spawnSync(full, ['--help'], { stdio: 'ignore', timeout: 10_000 });
      if (!probe.error) return full;
    }
  }
  throw new TracerError(
    'debugger_missing',
    `lldb's debug adapter was not found on PATH (looked for ${given ?? LLDB_DAP_NAMES.join(', ')})`,
    'install it: `apt-get install lldb` on Debian 12 (gives lldb-vscode-14), or an LLVM release with lldb-dap',
  );
}

/** Records `job` through lldb; the Trace is validated like every other. */
export async function traceViaLldb(job: LldbTraceJob, signal?: AbortSignal): Promise<Trace> {
  const started = performance.now();
  const limits = { ...DEFAULTS, ...job.limits };
  const env = codeEnv(job.env, {});
  const adapterPath = findLldbDap(env, job.adapter);
  const file = realpathSync(job.path);
  const source = readFileSync(file, 'utf8');
  const lines = source.split('\n');
  const work = mkdtempSync(path.join(tmpdir(), 'execverify-c-'));
  try {
    const program = path.join(work, 'prog');
    const cc = spawnSync('gcc', ['-g', '-O0', '-o', program, file], { env, encoding: 'utf8', timeout: 60_000 });
    if (cc.error) throw new TracerError('compiler_missing', `cannot run gcc: ${cc.error.message}`, 'install it: `apt-get install gcc`');
    if (cc.status !== 0) throw new TracerError('syntax_error', `gcc -g -O0 failed:\n${cc.stderr.trim().slice(-4000)}`);
    const gccVersion = spawnSync('gcc', ['--version'], { env, encoding: 'utf8' }).stdout.split('\n')[0]!.trim();
    let stdinFile = '/dev/null';
    if (job.stdinPath !== undefined) stdinFile = realpathSync(job.stdinPath);
    else if (job.stdin !== undefined) {
      stdinFile = path.join(work, 'stdin');
      writeFileSync(stdinFile, job.stdin);
    }
    return await record(program, `${gccVersion}; gcc -g -O0`, stdinFile);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }

  async function record(program: string, compiler: string, stdinFile: string): Promise<Trace> {
    const adapter = spawn(adapterPath, [], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const { dap, stderrTail: adapterErr } = connectAdapter(adapter);
    // lldb gives the program a pseudo-terminal, whose line discipline writes "\n" as "\r\n".
    const out = collectOutput(dap, limits.outputBytes, (text) => text.replace(/\r\n/g, '\n'));
    // lldb starts the program in a process group of its own: ending lldb's group does not end it.
    let debuggee: number | undefined;
    /** The launch request went out: from then a program may run whose pid only the `process` event says. */
    let launching = false;
    /** Settles once the program's pid is known, or no program can come any more (launch refused, adapter gone). */
    let pidSettled = () => {};
    const pidKnown = new Promise<void>((resolve) => (pidSettled = resolve));
    dap.on('process', (e: DebugProtocol.ProcessEvent) => {
      debuggee = e.body.systemProcessId;
      pidSettled();
    });
    dap.once('close', () => pidSettled());
    const killDebuggee = () => {
      try {
        if (debuggee !== undefined) process.kill(debuggee, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const exited = dap.waitFor<DebugProtocol.ExitedEvent>('exited').then(
      (e) => {
        debuggee = undefined; // reaped by lldb: its pid may be reused, never signalled
        return e.body.exitCode;
      },
      () => undefined,
    );
    const ended = dap.waitFor('terminated').then(
      () => undefined,
      () => undefined,
    );

    interface OpenFrame {
      id: number;
      fn: string;
      depth: number;
      line: number;
      locals: Map<string, string>;
      /** Declaration of each local lldb lists: a local is shown once its declaration has run. */
      declared: Map<string, Declaration>;
    }
    const steps: Step[] = [];
    const stack: OpenFrame[] = [];
    let nextFrame = 0;
    let outcome: Outcome | undefined;
    let halted: 'cancelled' | 'wall_time' | undefined;
    const wallLimit: Outcome = { kind: 'limit', limit: 'wall_time', message: `stopped after ${limits.wallTimeMs} ms` };
    const halt = (why: 'cancelled' | 'wall_time') => {
      if (halted) return;
      halted = why;
      // Every wait below ends here: the adapter and the debuggee go with it.
      const end = () => {
        killDebuggee();
        dap.fail(new Error(why === 'cancelled' ? 'cancelled' : 'out of time'));
        void stopProcessGroup(adapter);
      };
      if (!launching) return end(); // nothing started yet; a launch after this fails at once
      // lldb starts the program before it says its pid (the `process` event):
      // ending lldb first would leave the program running, orphaned. So the pid
      // is waited for while lldb still holds the program (endProgram below is
      // the backstop when lldb never says it).
      const grace = setTimeout(end, 2000);
      void pidKnown.then(() => {
        clearTimeout(grace);
        end();
      });
    };
    const onAbort = () => halt('cancelled');
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort);
    const timer = setTimeout(() => halt('wall_time'), limits.wallTimeMs);

    try {
      await dap.request('initialize', { clientID: 'execverify', adapterID: 'lldb', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
      const initialized = dap.waitFor('initialized');
      launching = true;
      const launched = dap.request('launch', {
        program,
        cwd: path.dirname(file),
        // lldb-vscode-14 has no `stdio` launch option; lldb's own setting redirects the program's stdin.
        initCommands: [`settings set target.input-path ${JSON.stringify(stdinFile)}`],
      });
      launched.catch(() => pidSettled()); // refused: no program started (awaited below)
      await Promise.race([initialized, launched]);
      await dap.request('setFunctionBreakpoints', { breakpoints: [{ name: 'main' }] });
      const firstStop = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
      firstStop.catch(() => undefined); // awaited below; a halt before then must not go unhandled
      await dap.request('configurationDone', {});
      await launched;
      let stop = await Promise.race([firstStop, ended]);
      if (!stop) throw new TracerError('bad_entry', `the program ended before main ran${adapterErr() ? `:\n${adapterErr().trim()}` : ''}`);
      const threadId = stop.body.threadId ?? 1;
      /** The last step came back out of another file's code (a libc call) into the middle of a line. */
      let outOf = false;
      for (;;) {
        if (!stop) {
          // Ended inside main: exit(n) (lldb sends `exited` before `terminated`).
          const code = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 2000, undefined))]);
          outcome =
            code === undefined
              ? { kind: 'crashed', message: 'the program ended before main returned', exitCode: null, signal: null }
              : { kind: 'exited', code };
          break;
        }
        if (stop.body.reason === 'exception' || stop.body.reason === 'signal') {
          // lldb stops where a signal (SIGSEGV, an abort) is delivered: the program goes no further.
          const info = await dap.request<DebugProtocol.ExceptionInfoResponse['body']>('exceptionInfo', { threadId }).catch(() => undefined);
          const why = info?.description ?? stop.body.description ?? stop.body.text ?? 'a signal';
          outcome = { kind: 'crashed', message: `the program stopped on ${why}`, exitCode: null, signal: /\bSIG[A-Z]+\b/.exec(why)?.[0] ?? null };
          break;
        }
        const view = await readStop(dap, threadId);
        const user = view.frames.filter((f) => f.path === file).reverse();
        if (user.length === 0) {
          // Out of main: the process's exit code is main's return value.
          while (stack.length > 0) popFrame();
          await dap.request('continue', { threadId });
          const code = await Promise.race([exited, ended.then(() => exited)]);
          outcome =
            code === undefined ? { kind: 'crashed', message: 'no exit code', exitCode: null, signal: null } : { kind: 'returned', value: intValue(code) };
          break;
        }
        if (view.frames[0]!.path !== file) {
          // In code of another file (libc): out of it, unrecorded.
          stop = await step('stepOut');
          outOf = true;
          continue;
        }
        if (steps.length >= limits.steps) {
          outcome = { kind: 'limit', limit: 'steps', message: `stopped after ${limits.steps} steps` };
          break;
        }
        await recordStop(user, outOf);
        outOf = false;
        stop = await step('stepIn');
      }

      async function step(command: 'stepIn' | 'stepOut'): Promise<DebugProtocol.StoppedEvent | undefined> {
        const next = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
        next.catch(() => undefined); // a halt fails the request first
        await dap.request(command, { threadId });
        return Promise.race([next, ended]);
      }
    } catch (err) {
      if (!halted) {
        if (err instanceof TracerError) throw err;
        if (err instanceof DapError) throw new TracerError('worker_crashed', `lldb: ${err.message}`, 'run the program under lldb by hand to see why');
        throw err;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (!halted) await Promise.race([dap.request('disconnect', { terminateDebuggee: true }).catch(() => undefined), new Promise((r) => setTimeout(r, 2000))]);
      killDebuggee();
      await stopProcessGroup(adapter);
      await endProgram(program);
    }

    if (halted === 'cancelled') throw new TracerError('cancelled', 'cancelled');
    if (halted === 'wall_time') outcome = wallLimit;
    const trace = {
      schema: TRACE_SCHEMA_VERSION,
      language: 'c' as const,
      runtime: { compiler, debugger: path.basename(adapterPath), isolation: 'none' as const },
      entry: { kind: 'call' as const, expr: 'main()' },
      ...(job.stdin !== undefined ? { stdin: { text: job.stdin } } : {}),
      files: [{ path: file, source }],
      steps,
      outcome,
      stdout: { text: out.stdout, truncated: out.stdoutCut },
      stderr: { text: out.stderr, truncated: out.stderrCut },
      stats: { events: steps.length, wallMs: performance.now() - started },
    };
    const parsed = safeParseTrace(trace);
    if (!parsed.ok) throw new TracerError('invalid_trace', `the lldb trace does not match ${TRACE_SCHEMA_VERSION}: ${parsed.error}`);
    return parsed.trace;

    /** The frame's locals that are live: listed by lldb and seen before or declared before the stop (else their bytes are garbage). */
    function readLocals(frame: OpenFrame, at: { id: number; line: number; column: number }): Promise<Record<string, Value>> {
      const live = (name: string, decl: Declaration | undefined) => frame.locals.has(name) || declaredBefore(decl, at.line, at.column);
      return readLldbLocals(dap, at.id, frame.declared, live, limits.containerItems);
    }

    /** One stop in the file (`user`: its frames, outermost first). */
    async function recordStop(user: DapFrameView[], outOf: boolean): Promise<void> {
      let common = 0;
      while (common < stack.length && common < user.length && stack[common]!.fn === user[common]!.name) common++;
      // A frame at the same depth and name that moved to an earlier line would be a new call; lldb always stops in between.
      const popped = stack.length - common;
      for (let k = 0; k < popped; k++) popFrame();
      const top = user[user.length - 1]!;
      // lldb stops in the caller, mid-line, right after a callee returns: that stop is the callee's return, not a new line.
      // So is the stop after stepping out of a libc call (scanf) back into its line.
      if ((popped > 0 || outOf) && common === user.length && stack[common - 1]!.line === top.line) return;
      for (let k = common; k < user.length; k++) {
        const f = user[k]!;
        const frame: OpenFrame = { id: nextFrame++, fn: f.name, depth: k, line: f.line, locals: new Map(), declared: new Map() };
        const parent = stack.length > 0 ? stack[stack.length - 1]!.id : null;
        const change = diff(frame.locals, await readLocals(frame, f));
        // The call is at the function's own line (as co_firstlineno is for Python), the first stop is past its prologue.
        steps.push({
          i: steps.length,
          event: 'call',
          frame: frame.id,
          parent,
          fn: f.name,
          file: 0,
          line: definitionLine(lines, f.name, f.line),
          depth: k,
          ...change,
        });
        stack.push(frame);
      }
      const frame = stack[stack.length - 1]!;
      const change = common === user.length ? diff(frame.locals, await readLocals(frame, top)) : {};
      frame.line = top.line;
      steps.push({ i: steps.length, event: 'line', frame: frame.id, fn: frame.fn, file: 0, line: top.line, depth: frame.depth, ...change });
    }

    function popFrame(): void {
      const f = stack.pop()!;
      // lldb-vscode does not show a returned value: marked unread, never asked.
      steps.push({ i: steps.length, event: 'return', frame: f.id, fn: f.fn, file: 0, line: f.line, depth: f.depth, value: UNREAD });
    }
  }
}

/**
 * Ends every process that runs `program` and waits until none does (Linux:
 * /proc/<pid>/exe; a zombie has no exe). The program is built in a directory
 * of this run's own, so only this run's processes match: whatever lldb left
 * (a pid it never said, a program it started as it was being stopped) ends
 * here. Elsewhere (no /proc) the pid from lldb is all there is.
 */
async function endProgram(program: string): Promise<void> {
  let real: string;
  try {
    real = realpathSync(program);
  } catch {
    return; // never built
  }
  const running = (): number[] => {
    let entries: string[];
    try {
      entries = readdirSync('/proc');
    } catch {
      return [];
    }
    const pids: number[] = [];
    for (const name of entries) {
      if (!/^\d+$/.test(name)) continue;
      let exe: string;
      try {
        exe = readlinkSync(`/proc/${name}/exe`);
      } catch {
        continue; // gone, a zombie, or not ours to read
      }
      if (exe === real || exe === `${real} (deleted)`) pids.push(Number(name));
    }
    return pids;
  };
  // SIGKILL is not ignored, caught or blocked: each process ends once scheduled; the bound is only against a kernel that never does.
  for (let tries = 0; tries < 500; tries++) {
    const pids = running();
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

function intValue(n: number): Value {
  return { repr: String(n), type: 'int', literal: true };
}

/** The line that names `fn` with an opening parenthesis, at or above the function's first stop. */
export function definitionLine(lines: readonly string[], fn: string, firstStop: number): number {
  const re = new RegExp(`(?:^|[^\\w])${fn.replace(/[^\w]/g, '')}\\s*\\(`);
  for (let n = firstStop; n >= 1; n--) if (re.test(lines[n - 1] ?? '')) return n;
  return firstStop;
}
