// Runs the Python half of harvesting (`python -m execverify.harvest capture|build`)
// in a child process with a time limit, and reads its JSON-lines output files
// through zod schemas. The child never outlives this process: it is told our
// pid and stops when we die (PR_SET_PDEATHSIG; bubblewrap's --die-with-parent
// inside), and whatever its tests left in its process group is killed when
// it exits.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { z } from 'zod';
import { readJsonl } from '../dataset/store';
import { workerEnv } from '../python';

export const CapturedCallSchema = z.object({
  kind: z.literal('call'),
  file: z.string(),
  function: z.string(),
  line: z.number().int(),
  entry: z.string(),
  result: z.string(),
  resultType: z.string(),
  test: z.string().nullable(),
  /** A generator function's call: `result` is the list of what it yielded to its end; the sample runs `list(entry)`. */
  generator: z.boolean().optional(),
});
export type CapturedCall = z.infer<typeof CapturedCallSchema>;

export const CaptureSummarySchema = z
  .object({
    kind: z.literal('summary'),
    calls: z.number().int(),
    drops: z.record(z.number()),
    runner: z.string(),
    testsRun: z.number().int().optional(),
    testFailures: z.number().int().optional(),
    exit: z.number().int().optional(),
    /** Test modules pytest or unittest could not collect (import errors, syntax errors). */
    collectionErrors: z.number().int().optional(),
    errors: z.array(z.object({ where: z.string(), lines: z.array(z.string()) })).optional(),
    /** Cut short (--max-time, a signal): continued with `capture --resume`, never reused as complete. */
    interrupted: z.boolean().optional(),
    complete: z.boolean().optional(),
    /** Seconds (wall, CPU) the test run took inside the capture process. */
    seconds: z.number().optional(),
    cpuSeconds: z.number().optional(),
    /** Functions and methods defined in the project modules the tests loaded, and how many of them the tests called. */
    functions: z
      .object({
        defined: z.object({ functions: z.number().int(), methods: z.number().int() }),
        called: z.object({ functions: z.number().int(), methods: z.number().int() }),
      })
      .optional(),
  })
  .passthrough();
export type CaptureSummary = z.infer<typeof CaptureSummarySchema>;

export const BuiltSampleSchema = CapturedCallSchema.extend({
  kind: z.literal('sample'),
  code: z.string(),
  /** [sample line, module line, line count] for each piece cut from the module. */
  segments: z.array(z.tuple([z.number(), z.number(), z.number()])),
  astHash: z.string(),
  nesting: z.number().int().nonnegative(),
  /** Third-party packages (`--allow-import`) the sample imports → their version (null when unknown). */
  imports: z.record(z.string().nullable()).optional(),
});
export type BuiltSample = z.infer<typeof BuiltSampleSchema>;

export const BuildDropSchema = z.object({ kind: z.literal('drop'), reason: z.string(), file: z.string(), function: z.string() });
export const BuildSummarySchema = z.object({ kind: z.literal('summary'), kept: z.number().int(), drops: z.record(z.number()) });

const BuildLineSchema = z.discriminatedUnion('kind', [BuiltSampleSchema, BuildDropSchema, BuildSummarySchema]);
const CaptureLineSchema = z.discriminatedUnion('kind', [CapturedCallSchema, CaptureSummarySchema]);

export interface PythonRun {
  python: string;
  tracerDir: string;
  /** This process's environment: only workerEnv's allow-list of it reaches the tests. */
  env: NodeJS.ProcessEnv;
  /** What the user explicitly gave the project's tests (`harvest --pass-env NAME`). */
  jobEnv?: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export class HarvestProcessError extends Error {
  constructor(
    message: string,
    /** The time limit ended the run (it got SIGTERM first, so it may have written partial output). */
    readonly timedOut = false,
  ) {
    super(message);
  }
}

/** Runs `python -m execverify.harvest ARGS`; rejects with the stderr tail on failure or timeout. */
export function runHarvestPython(args: string[], run: PythonRun): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(run.python, ['-m', 'execverify.harvest', '--parent-pid', String(process.pid), ...args], {
      cwd: run.cwd,
      env: workerEnv(run.env, run.tracerDir, run.jobEnv),
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    // The project's tests may start their own processes: kill the whole group.
    const killGroup = (sig: NodeJS.Signals = 'SIGKILL') => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        if (child.exitCode === null && child.signalCode === null) child.kill(sig);
      }
    };
    let why: string | null = null;
    let hardKill: NodeJS.Timeout | undefined;
    // SIGTERM first: the capture stops the tests and writes what it has; SIGKILL 5 s later.
    const stop = (reason: string) => {
      why = reason;
      killGroup('SIGTERM');
      hardKill = setTimeout(() => killGroup('SIGKILL'), 5000);
    };
    const timer = setTimeout(() => stop(`timed out after ${Math.round(run.timeoutMs / 1000)} s`), run.timeoutMs);
    const onAbort = () => stop('cancelled');
    run.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new HarvestProcessError(`could not start ${run.python}: ${err.message} — install Python 3.8+ or set EXECVERIFY_PYTHON`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      // What the tests left behind in the group (a daemon, a server) goes with it.
      killGroup('SIGKILL');
      run.signal?.removeEventListener('abort', onAbort);
      if (why) return reject(new HarvestProcessError(`python -m execverify.harvest ${args[0]} ${why}`, why !== 'cancelled'));
      if (code !== 0) {
        const tail = stderr.trim().split('\n').slice(-8).join('\n');
        return reject(new HarvestProcessError(`python -m execverify.harvest ${args[0]} failed (exit ${code}):\n${tail}`));
      }
      resolve();
    });
  });
}

/** Why `python` cannot run a harvest (not startable, older than 3.8), or null. */
export function pythonProblem(python: string, env: NodeJS.ProcessEnv, tracerDir: string): Promise<string | null> {
  return new Promise((resolve) => {
    // Written so that any Python, 2.7 included, prints its version.
    const probe = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))";
    const child = spawn(python, ['-c', probe], { env: workerEnv(env, tracerDir), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', (err) => resolve(`could not start ${python}: ${err.message} — install Python 3.8+ or pass --python PATH (or set EXECVERIFY_PYTHON)`));
    child.on('exit', (code) => {
      const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(out.trim());
      if (code !== 0 || !m) return resolve(`${python} did not report its version (exit ${code}) — pass --python PATH to a Python 3.8+`);
      const [major, minor] = [Number(m[1]), Number(m[2])];
      if (major < 3 || (major === 3 && minor < 8)) {
        return resolve(`${python} is Python ${out.trim()}: harvesting needs Python 3.8 or newer — pass --python PATH (or set EXECVERIFY_PYTHON)`);
      }
      resolve(null);
    });
  });
}

/** What a capture file holds: a finished run, an interrupted one (resumable), or nothing usable. */
export function captureState(file: string): 'complete' | 'interrupted' | 'missing' {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trimEnd();
  } catch {
    return 'missing';
  }
  try {
    const last = JSON.parse(text.slice(text.lastIndexOf('\n') + 1)) as { kind?: string; complete?: boolean; interrupted?: boolean };
    if (last.kind !== 'summary') return 'missing';
    return (last.complete ?? !last.interrupted) ? 'complete' : 'interrupted';
  } catch {
    return 'missing';
  }
}

export function readCaptured(file: string): { calls: CapturedCall[]; summary: CaptureSummary | null; invalid: number } {
  const read = readJsonl(file, (v) => CaptureLineSchema.parse(v));
  const calls = read.items.filter((x): x is CapturedCall => x.kind === 'call');
  const summary = read.items.find((x): x is CaptureSummary => x.kind === 'summary') ?? null;
  return { calls, summary, invalid: read.invalid };
}

export function readBuilt(file: string): { samples: BuiltSample[]; drops: z.infer<typeof BuildDropSchema>[]; invalid: number } {
  const read = readJsonl(file, (v) => BuildLineSchema.parse(v));
  return {
    samples: read.items.filter((x): x is BuiltSample => x.kind === 'sample'),
    drops: read.items.filter((x): x is z.infer<typeof BuildDropSchema> => x.kind === 'drop'),
    invalid: read.invalid,
  };
}
