// The WorkerPool: persistent `python -m execverify.worker` processes (one per
// core by default) that run ops over JSON lines — the judge's and, through
// TracerPool (trace/runner.ts), trace jobs.
import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import * as os from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';
import { pythonTracerDir, resolvePython, workerEnv } from '../python';

export type TracerErrorCode =
  | 'python_not_found'
  | 'worker_crashed'
  | 'protocol'
  | 'bad_entry'
  | 'syntax_error'
  | 'file_not_found'
  | 'invalid_trace'
  | 'cancelled'
  | 'closed'
  | 'timeout'
  | 'unknown_op'
  | 'tracer_internal'
  | 'tampered'
  | 'internal'
  | (string & {});

const HINTS: Record<string, string> = {
  python_not_found: 'Install Python 3.8+ or point execverify.pythonPath (or EXECVERIFY_PYTHON) at an interpreter.',
  worker_crashed: 'The tracer worker died; it is restarted for the next job. If it keeps happening, run `execverify trace` on the file to see the error.',
  protocol: 'The worker answered something unexpected: check that execverify.pythonPath is a CPython 3.8+ interpreter.',
  bad_entry: 'Give a call expression such as f([1, 2], 3), a script, or module:function.',
  syntax_error: 'Fix the syntax error in the traced file, then trace again.',
  file_not_found: 'Check the path (relative paths are resolved from the working directory).',
  invalid_trace: 'The worker produced a trace this version cannot read: make sure python-tracer matches the extension version.',
  cancelled: '',
  closed: 'The tracer pool was closed; create a new one.',
  timeout: 'The worker did not answer in time; it was restarted.',
  unknown_op: 'The worker does not know this op: python-tracer may be older than the extension.',
  tracer_internal: 'This is a bug in the tracer; please report it with the program that triggered it.',
  tampered: "The traced program wrote into the tracer's own messages: its trace was dropped, and no other job's was touched.",
};

/** Every failure of the runner, with what to do next in `hint`. */
export class TracerError extends Error {
  readonly code: TracerErrorCode;
  readonly hint: string;
  constructor(code: TracerErrorCode, message: string, hint?: string) {
    const h = hint ?? HINTS[code] ?? '';
    super(h ? `${message} — ${h}` : message);
    this.name = 'TracerError';
    this.code = code;
    this.hint = h;
  }
}

const ResponseSchema = z.union([
  // number first: the pool's ids are numbers (a failed first option costs a zod issue)
  z.object({
    id: z.union([z.number(), z.string()]).nullable(),
    ok: z.literal(true),
    result: z.unknown(),
    // the sizes of the frames that follow the line (python-tracer/execverify/worker.py, Frames)
    frames: z.array(z.number().int().nonnegative()).optional(),
  }),
  z.object({
    id: z.union([z.number(), z.string()]).nullable(),
    ok: z.literal(false),
    error: z.object({ code: z.string(), message: z.string() }),
  }),
]);

type SpawnFn = (command: string, args: string[], options: SpawnOptions) => ChildProcess;

export interface WorkerPoolOptions {
  /** Interpreter to run (already resolved, or resolved from env via resolvePython). */
  python?: string;
  /** Number of workers; default os.availableParallelism(). */
  size?: number;
  /** The engine's own environment: only an allow-list of it reaches the workers (see workerEnv). */
  env?: NodeJS.ProcessEnv;
  /** What the user set for the traced programs (a launch configuration's env): passed as given. */
  jobEnv?: Record<string, string>;
  /** The python-tracer directory; default found from this file upward. */
  tracerDir?: string;
  /** Injected for tests. */
  spawn?: SpawnFn;
  /**
   * Extra time the runner waits beyond a job's own wall limit before it
   * declares the worker stuck and restarts it (the worker enforces limits
   * itself; this is only a safety net).
   */
  graceMs?: number;
  /**
   * The longest answer read, its line and its frames (default 256 MiB; V8
   * cannot make a string of more than ~512 Mi characters). One trace is at
   * most `traceBytes` (64 MiB) and its output; a batch of big traces may be
   * longer: it fails with `answer_too_large` and TracerPool.traceMany traces
   * its jobs one by one.
   */
  maxAnswerBytes?: number;
}

/** WorkerPoolOptions.maxAnswerBytes's default. */
export const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

interface Pending {
  id: number;
  op: string;
  params: Record<string, unknown>;
  timeoutMs: number;
  resolve: (value: unknown) => void;
  reject: (err: TracerError) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
  worker?: Worker;
  timer?: NodeJS.Timeout;
  /** May wait in a busy worker's input behind another such job (see Worker.next). */
  pipelined?: boolean;
}

/**
 * A worker's process as its Worker sees it: the lines in and out, its
 * stderr, how to stop it, and one call to `ended` when it is gone.
 */
interface WorkerProcess {
  readonly input: Writable;
  readonly output: Readable;
  readonly errors: Readable;
  readonly exited: boolean;
  /** Resolves once the process is gone. */
  readonly gone: Promise<void>;
  /** Kills the worker and its job's child: the whole process group. */
  kill(): void;
  setRef(on: boolean): void;
}

type Ended = (status: string, spawnError?: NodeJS.ErrnoException) => void;

/** A worker the pool spawned: `python -m execverify.worker`. */
class SpawnedProcess implements WorkerProcess {
  readonly gone: Promise<void>;

  constructor(
    readonly proc: ChildProcess,
    ended: Ended,
  ) {
    this.gone = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.on('error', (err: NodeJS.ErrnoException) => ended(`failed: ${err.message}`, err));
    proc.on('exit', (code, signal) => ended(signal ?? `code ${code}`));
  }

  get input(): Writable {
    return this.proc.stdin!;
  }
  get output(): Readable {
    return this.proc.stdout!;
  }
  get errors(): Readable {
    return this.proc.stderr!;
  }
  get exited(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null;
  }

  kill(): void {
    if (this.exited) return;
    killGroup(this.proc.pid, () => this.proc.kill('SIGKILL'));
  }

  setRef(on: boolean): void {
    if (on) this.proc.ref();
    else this.proc.unref();
    refStreams([this.proc.stdout, this.proc.stderr, this.proc.stdin], on);
  }
}

function killGroup(pid: number | undefined, fallback: () => void): void {
  try {
    if (pid !== undefined && process.platform !== 'win32') process.kill(-pid, 'SIGKILL');
    else fallback();
  } catch {
    fallback();
  }
}

function refStreams(streams: unknown[], on: boolean): void {
  for (const s of streams as Array<{ ref?: () => void; unref?: () => void } | null>) {
    if (on) s?.ref?.();
    else s?.unref?.();
  }
}

/**
 * `python -m execverify.worker`, without runpy, and entering the sandbox
 * before the worker's imports: python-tracer/execverify/isolation.py
 * WORKER_MAIN, which a test keeps equal to this.
 */
export const WORKER_MAIN = 'import sys; from execverify.isolation import enter_worker; enter_worker(); from execverify.worker import main; sys.exit(main())';

/**
 * Starts `count` workers, one spawn each: a spawn is one sandbox holding one
 * worker (the worker re-executes itself inside bubblewrap, see
 * python-tracer/execverify/isolation.py), so killing a worker's process
 * group kills its sandbox, and nothing in one worker's sandbox can reach
 * another's.
 */
function startProcesses(spawn: SpawnFn, python: string, env: NodeJS.ProcessEnv, count: number, ended: Ended[]): WorkerProcess[] {
  // detached: the worker leads its own process group, so a cancel can kill
  // it together with the forked child running the job. -S: the worker runs
  // `site` itself when a job first needs it (tracer.ensure_site), so a
  // worker that only traces self-contained calls answers sooner. -c rather
  // than -m: runpy would import importlib.util, contextlib and collections.
  const args = ['-u', '-S', '-c', WORKER_MAIN];
  return ended
    .slice(0, count)
    .map((end) => new SpawnedProcess(spawn(python, args, { env, stdio: ['pipe', 'pipe', 'pipe'], detached: process.platform !== 'win32' }), end));
}

/**
 * An answer whose frames are still coming: `left` bytes of them. `keep`:
 * within maxAnswerBytes, so they are kept (`parts`) and become the answer's
 * result, one Buffer per frame; else they are read and dropped, and the
 * answer is `answer_too_large`.
 */
interface Framed {
  answer: z.infer<typeof ResponseSchema>;
  left: number;
  parts: Buffer[];
  keep: boolean;
}

function tooLarge(job: Pending | undefined, bytes: number, max: number): z.infer<typeof ResponseSchema> {
  return {
    id: job?.id ?? null,
    ok: false,
    error: { code: 'answer_too_large', message: `the worker's answer to '${job?.op ?? '?'}' is ${bytes} bytes, more than ${max}` },
  };
}

class Worker {
  /** The job the worker is running (its timer runs). */
  job: Pending | undefined;
  /**
   * A pipelined job already written behind `job`: the worker reads it the
   * moment it answers `job`, instead of idling for a round trip. It starts
   * (and its timer with it) when `job` is answered.
   */
  next: Pending | undefined;
  dead = false;
  private chunks: Buffer[] = [];
  /** The answer whose frames are being read (see onLine). */
  private framed: Framed | undefined;
  private stderrTail = '';

  constructor(
    private readonly pool: WorkerPool,
    readonly proc: WorkerProcess,
    private readonly python: string,
  ) {
    this.proc.output.on('data', (chunk: Buffer) => this.onData(chunk));
    this.proc.errors.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4000);
    });
    this.proc.input.on('error', () => {
      /* reported through the end of the process */
    });
    this.setRef(false);
  }

  /** The process is gone (or never started). */
  ended(status: string, spawnError?: NodeJS.ErrnoException): void {
    if (spawnError?.code === 'ENOENT' || spawnError?.code === 'EACCES') {
      this.die(new TracerError('python_not_found', `Python interpreter '${this.python}' could not be started (${spawnError.code})`));
      return;
    }
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    this.die(new TracerError('worker_crashed', `tracer worker ${spawnError ? status : `exited (${status})`}${tail ? `: ${tail}` : ''}`));
  }

  /** Whether `job` may be written behind the running one. */
  canQueue(job: Pending): boolean {
    return !this.dead && this.next === undefined && this.job?.pipelined === true && job.pipelined === true;
  }

  send(job: Pending): void {
    job.worker = this;
    if (this.job) this.next = job;
    else this.start(job);
    this.setRef(true);
    const line = JSON.stringify({ ...job.params, id: job.id, op: job.op }) + '\n';
    this.proc.input.write(line);
  }

  private start(job: Pending): void {
    this.job = job;
    this.setRef(true);
    job.timer = setTimeout(() => {
      this.kill();
      this.die(new TracerError('timeout', `the worker did not answer '${job.op}' within ${job.timeoutMs} ms`));
    }, job.timeoutMs);
  }

  /** Kills the worker and the job's child (the whole process group). */
  kill(): void {
    this.proc.kill();
  }

  private setRef(on: boolean): void {
    // An idle pool must not keep the process alive; a busy one must.
    this.proc.setRef(on);
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      if (this.framed) {
        start = this.onFrames(chunk, start);
        continue;
      }
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        this.chunks.push(chunk.subarray(start));
        return;
      }
      this.chunks.push(chunk.subarray(start, nl));
      const line = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.chunks = [];
      start = nl + 1;
      this.onLine(line);
    }
  }

  private onLine(line: Buffer): void {
    const job = this.job;
    let parsed: z.infer<typeof ResponseSchema>;
    try {
      parsed =
        line.length > this.pool.maxAnswerBytes
          ? // Read whole and in step with the worker, but not made into a string: the job fails alone.
            tooLarge(job, line.length, this.pool.maxAnswerBytes)
          : ResponseSchema.parse(JSON.parse(line.toString('utf8')));
    } catch (err) {
      if (!job) return; // a late answer to a cancelled job: ignore
      this.finish(job);
      this.kill();
      job.reject(new TracerError('protocol', `unreadable answer from the worker: ${(err as Error).message.slice(0, 200)}`));
      return;
    }
    if (parsed.ok && parsed.frames) {
      // Its frames follow: read in step with the worker whoever they are
      // for, and kept only within the bound (onFrames).
      const left = parsed.frames.reduce((a, b) => a + b, 0);
      const keep = line.length + left <= this.pool.maxAnswerBytes;
      this.framed = { answer: keep ? parsed : tooLarge(job, line.length + left, this.pool.maxAnswerBytes), left, parts: [], keep };
      if (left === 0) this.onFrames(Buffer.alloc(0), 0);
      return;
    }
    this.onAnswer(parsed);
  }

  /** Reads the frames of `this.framed` from `chunk` at `start`; returns where they end in it. */
  private onFrames(chunk: Buffer, start: number): number {
    const framed = this.framed!;
    const end = Math.min(chunk.length, start + framed.left);
    if (framed.keep && end > start) framed.parts.push(chunk.subarray(start, end));
    framed.left -= end - start;
    if (framed.left > 0) return end;
    this.framed = undefined;
    const { answer } = framed;
    if (answer.ok) {
      const all = framed.parts.length === 1 ? framed.parts[0]! : Buffer.concat(framed.parts);
      let at = 0;
      answer.result = answer.frames!.map((n) => all.subarray(at, (at += n)));
    }
    this.onAnswer(answer);
    return end;
  }

  /** One whole answer: the running job's, or (a late answer to a cancelled job) nobody's. */
  private onAnswer(parsed: z.infer<typeof ResponseSchema>): void {
    const job = this.job;
    if (!job || parsed.id !== job.id) return;
    this.finish(job);
    const next = this.next;
    this.next = undefined;
    if (next) this.start(next);
    if (parsed.ok) job.resolve(parsed.result);
    else job.reject(new TracerError(parsed.error.code, parsed.error.message));
    if (next) this.pool.workerReady(this);
    else this.pool.workerIdle(this);
  }

  private finish(job: Pending): void {
    if (job.timer) clearTimeout(job.timer);
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
    this.job = undefined;
    this.setRef(false);
  }

  /**
   * The worker is gone. The running job fails with `err`, unless another
   * job was `cancelled` (then it is only a bystander); a bystander, and a
   * pipelined job that never started, go back to the pool's queue.
   */
  die(err: TracerError, cancelled?: Pending): void {
    if (this.dead) return;
    this.dead = true;
    const job = this.job;
    const next = this.next;
    this.next = undefined;
    if (job) {
      if (cancelled && cancelled !== job) {
        if (job.timer) clearTimeout(job.timer);
        this.job = undefined;
        this.pool.requeue(job, err);
      } else {
        this.finish(job);
        job.reject(err);
      }
    }
    if (next) {
      if (next === cancelled) next.reject(err);
      else this.pool.requeue(next, err);
    }
    this.pool.workerDied(this, err);
  }
}

/**
 * Persistent Python workers. Jobs queue FIFO; each idle worker takes the next.
 * Workers start lazily, are restarted when they die, and are killed (with the
 * job's child process) when a job is cancelled through its AbortSignal.
 */
export class WorkerPool {
  readonly size: number;
  private readonly python: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly jobEnv: Record<string, string> | undefined;
  private readonly spawn: SpawnFn;
  protected readonly graceMs: number;
  readonly maxAnswerBytes: number;
  private readonly tracerDir: string | undefined;
  private workers: Worker[] = [];
  private idle: Worker[] = [];
  private queue: Pending[] = [];
  private nextId = 1;
  private closed = false;
  private startFailure: TracerError | undefined;

  constructor(options: WorkerPoolOptions = {}) {
    const env = options.env ?? process.env;
    this.python = options.python ?? resolvePython(undefined, env);
    this.size = Math.max(1, options.size ?? os.availableParallelism());
    this.spawn = options.spawn ?? (nodeSpawn as SpawnFn);
    this.graceMs = options.graceMs ?? 10_000;
    this.maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    this.tracerDir = options.tracerDir;
    this.env = env;
    this.jobEnv = options.jobEnv;
  }

  /** Sends any op to a worker (e.g. the judge's ops); the result is unvalidated. */
  request(op: string, params: Record<string, unknown> = {}, signal?: AbortSignal, timeoutMs = 60_000): Promise<unknown> {
    return this.submit(op, params, signal, timeoutMs, false);
  }

  protected submit(op: string, params: Record<string, unknown>, signal: AbortSignal | undefined, timeoutMs: number, pipelined: boolean): Promise<unknown> {
    if (this.closed) return Promise.reject(new TracerError('closed', 'the tracer pool is closed'));
    if (signal?.aborted) return Promise.reject(new TracerError('cancelled', `'${op}' was cancelled`));
    return new Promise<unknown>((resolve, reject) => {
      const job: Pending = { id: this.nextId++, op, params, timeoutMs, resolve, reject, signal, pipelined };
      if (signal) {
        job.onAbort = () => this.cancel(job);
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.pump();
    });
  }

  /** Stops every worker; queued and running jobs fail with 'closed'. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new TracerError('closed', 'the tracer pool was closed');
    for (const job of this.queue.splice(0)) job.reject(err);
    const exits = this.workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.dead || w.proc.exited) return resolve();
          void w.proc.gone.then(resolve);
          const busy = w.job !== undefined;
          if (busy) w.die(err);
          w.proc.setRef(true); // keep this process alive until the worker is gone
          if (busy) w.kill();
          else w.proc.input.end();
          setTimeout(() => {
            w.kill();
            resolve();
          }, 2000).unref();
        }),
    );
    await Promise.all(exits);
  }

  /** Number of running worker processes (for tests and status displays). */
  get running(): number {
    return this.workers.filter((w) => !w.dead).length;
  }

  private cancel(job: Pending): void {
    const i = this.queue.indexOf(job);
    if (i >= 0) {
      this.queue.splice(i, 1);
      job.reject(new TracerError('cancelled', `'${job.op}' was cancelled`));
      return;
    }
    const w = job.worker;
    if (w && (w.job === job || w.next === job)) {
      // The worker has this job: stop it (and the job's child).
      w.die(new TracerError('cancelled', `'${job.op}' was cancelled`), job);
      w.kill();
    }
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let w = this.idle.pop();
      if (!w && this.workers.length >= this.size && this.queue.length > this.size) {
        // Every worker is busy: queue a pipelined job behind a pipelined
        // one, while more wait than there are workers. The last few stay
        // here for whichever worker frees first: one queued behind a slow
        // batch would keep its worker busy while another idles.
        const job = this.queue[0]!;
        const busy = this.workers.find((x) => x.canQueue(job));
        if (busy) {
          this.queue.shift();
          busy.send(job);
          continue;
        }
      }
      if (!w) {
        if (this.workers.length >= this.size) return;
        if (this.startFailure) {
          const err = this.startFailure;
          for (const job of this.queue.splice(0)) job.reject(err);
          return;
        }
        w = this.startWorkers(1)[0];
        if (!w) return;
      }
      const job = this.queue.shift()!;
      w.send(job);
    }
  }

  /** Starts idle workers up to `n` (at most the pool's size) ahead of the work. */
  protected warm(n: number): void {
    const missing = Math.min(this.size, n) - this.workers.length;
    if (this.closed || this.startFailure || missing <= 0) return;
    this.idle.push(...this.startWorkers(missing));
  }

  /** Starts `count` workers (see startProcesses). */
  private startWorkers(count: number): Worker[] {
    let dir: string;
    try {
      dir = this.tracerDir ?? pythonTracerDir();
    } catch (err) {
      this.startFailure = new TracerError('python_not_found', (err as Error).message, '');
      this.pump();
      return [];
    }
    // Bytecode on (empty = off) for the worker only: it caches its own
    // package's .pyc (start-up ~2x faster than compiling it each time) and
    // imports nothing else; the sandboxed child that runs traced code sets
    // sys.dont_write_bytecode, so a user's project never gets __pycache__.
    const env = { ...workerEnv(this.env, dir, this.jobEnv), PYTHONDONTWRITEBYTECODE: '' };
    const started: Worker[] = [];
    // a process reports its end to its Worker (ends come later, as events)
    const ended = Array.from(
      { length: count },
      (_, k): Ended =>
        (status, spawnError) =>
          started[k]!.ended(status, spawnError),
    );
    for (const proc of startProcesses(this.spawn, this.python, env, count, ended)) started.push(new Worker(this, proc, this.python));
    this.workers.push(...started);
    return started;
  }

  /** @internal */
  workerIdle(w: Worker): void {
    if (this.closed || w.dead) return;
    this.idle.push(w);
    this.pump();
  }

  /** @internal A worker started its pipelined job: it may take another behind it. */
  workerReady(w: Worker): void {
    if (this.closed || w.dead) return;
    this.pump();
  }

  /** @internal A job a dead worker did not finish for reasons of its own: first in line again. */
  requeue(job: Pending, err: TracerError): void {
    job.worker = undefined;
    if (this.closed) {
      job.reject(err.code === 'closed' ? err : new TracerError('closed', 'the tracer pool was closed'));
    } else if (job.signal?.aborted) {
      // cancelled together with the job that brought the worker down
      if (job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
      job.reject(new TracerError('cancelled', `'${job.op}' was cancelled`));
    } else {
      this.queue.unshift(job);
    }
  }

  /** @internal */
  workerDied(w: Worker, err: TracerError): void {
    this.workers = this.workers.filter((x) => x !== w);
    this.idle = this.idle.filter((x) => x !== w);
    if (!w.proc.exited) w.kill();
    // A missing interpreter will not appear by retrying: fail what is queued.
    if (err.code === 'python_not_found') {
      this.startFailure = err;
      for (const job of this.queue.splice(0)) job.reject(err);
      return;
    }
    if (!this.closed) this.pump();
  }
}
