// Runs the Python half of harvesting (`python -m execverify.harvest capture|build`)
// in a child process with a time limit, and reads its JSON-lines output files
// through zod schemas.
import { spawn } from 'node:child_process';
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
    const child = spawn(run.python, ['-m', 'execverify.harvest', ...args], {
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
        child.kill(sig);
      }
    };
    let why: string | null = null;
    let hardKill: NodeJS.Timeout | undefined;
    // SIGTERM first: the capture stops the tests and writes what it has; SIGKILL 5 s later.
    const timer = setTimeout(() => {
      why = `timed out after ${Math.round(run.timeoutMs / 1000)} s`;
      killGroup('SIGTERM');
      hardKill = setTimeout(() => killGroup('SIGKILL'), 5000);
    }, run.timeoutMs);
    const onAbort = () => {
      why = 'cancelled';
      killGroup();
    };
    run.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new HarvestProcessError(`could not start ${run.python}: ${err.message} — install Python 3.8+ or set EXECVERIFY_PYTHON`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearTimeout(hardKill);
      run.signal?.removeEventListener('abort', onAbort);
      if (why) return reject(new HarvestProcessError(`python -m execverify.harvest ${args[0]} ${why}`, why !== 'cancelled'));
      if (code !== 0) {
        const tail = stderr.trim().split('\n').slice(-6).join('\n');
        return reject(new HarvestProcessError(`python -m execverify.harvest ${args[0]} failed (exit ${code}):\n${tail}`));
      }
      resolve();
    });
  });
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
