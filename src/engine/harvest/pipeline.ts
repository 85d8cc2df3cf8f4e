// The harvest pipeline: a project's own tests → captured calls → standalone
// samples → credential scan → dedup → traced re-run → questions → difficulty
// (→ model pass rate) → the sample store, with a report of every drop.
//
// Resumable: the capture and build stages write their files atomically; a
// finished capture is reused, an interrupted one continued (never taken as
// complete), and the build is reused while it matches the calls; every candidate that was kept or dropped is
// remembered (store + drops.jsonl), so a run killed at any point and started
// again continues where it stopped and ends with the same dataset.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChatMessage, Difficulty, ModelAnswer } from '../dataset/record';
import { exactKey, sha256, splitFor } from '../dataset/record';
import { buildSample } from '../dataset/sample';
import { JsonlAppender, readJsonl, SampleStore, STORE_FILE } from '../dataset/store';
import { inShard, shardOf, type Shard } from '../dataset/exporters';
import type { Trace } from '../trace/schema';
import { environmentSecrets, findSecrets, redactCredentials } from './credentials';
import { inBand, structuralDifficulty, type PassBand } from './difficulty';
import { discoverProject, type GitRunner, type ProjectInfo } from './project';
import {
  DEFAULT_CHECK_SEEDS,
  DEFAULT_HASH_SEED,
  localPathFinder,
  machineDependence,
  PRIMARY_JOB_ENV,
  RERUN_CWD,
  RERUN_JOB_ENV,
  unstableReason,
  type TraceRun,
} from './determinism';
import { movedQuestions, QuestionSchema, triviality, type Question } from '../questions';
import { TracerPool } from '../trace/runner';
import { captureState, HarvestProcessError, pythonProblem, readBuilt, readCaptured, runHarvestPython, type BuiltSample } from './python-harvest';
import { silentProgress, type Progress } from './progress';
import { buildReport, DropEntrySchema, type DropEntry, type HarvestReport, type StageTiming } from './report';

/** Questions, prompt and ground truth for one traced sample, or why there are none. */
export interface SampleQuestions {
  questions: { id?: string; kind: string }[];
  prompt: ChatMessage[];
  groundTruth: string;
  reference: string | null;
  /** The answer format and `name@version` of the template that rendered the prompt. */
  format?: string;
  template?: string;
}
export type Questioner = (trace: Trace, sample: { code: string; entry: string; function: string }) => SampleQuestions | { skip: string };

/** Asks a model (or the baseline) k times and scores each answer with the judge. */
export interface AnswerScorer {
  label: string;
  k: number;
  score(questions: SampleQuestions, trace: Trace, signal?: AbortSignal): Promise<ModelAnswer[]>;
}

export interface Tracer {
  trace(
    job: { path?: string; source?: string; entry: { kind: 'call'; expr: string }; cwd?: string; limits?: Record<string, number> },
    signal?: AbortSignal,
  ): Promise<Trace>;
}

/** A tracer whose runs use one hash seed and one job environment (a TracerPool started with them). */
export interface SeededTracer extends Tracer {
  close?(): void;
}

export interface HarvestOptions {
  project: string;
  out: string;
  /** Stop once the store holds this many samples. */
  limit?: number;
  /** Stop starting new work after this many seconds (the test run is also bounded by it). */
  maxTimeS?: number;
  shard?: Shard;
  /** What to do with a credential found in code or values. */
  secrets?: 'drop' | 'redact';
  runner?: 'auto' | 'unittest' | 'pytest';
  /** Distinct captured calls kept per function. */
  perFunction?: number;
  /** Third-party top-level packages a sample may import (`build --allow-import`); their versions go in provenance. */
  allowImports?: readonly string[];
  /** Split fractions by function. */
  splits?: { validation: number; test: number };
  /** Keep only samples whose model pass rate lies in the band (needs a scorer). */
  passBand?: PassBand;
  /** Parallel traced re-runs (default: the tracer pool's size). */
  concurrency?: number;
  /** Steps kept per sample as CWM frames. */
  maxFrames?: number;
  projectName?: string;
  /** PYTHONHASHSEED of every sample's run, recorded in the sample (default 0). */
  hashSeed?: number;
  /** Seeds every truth is confirmed under, besides a second run (default 1 and 2). */
  checkSeeds?: readonly number[];
}

export interface HarvestDeps {
  python: string;
  tracerDir: string;
  /** This process's environment: the tests get workerEnv's allow-list of it, never all of it. */
  env: NodeJS.ProcessEnv;
  /** What the user explicitly gave the project's tests (`--pass-env NAME`), on top. */
  jobEnv?: Record<string, string>;
  /** The tracer of one run (its seed and environment); default a TracerPool per run, closed at the end. */
  tracerFor?: (run: TraceRun) => SeededTracer;
  questioner: Questioner;
  scorer?: AnswerScorer;
  progress?: Progress;
  git?: GitRunner;
  /** One-line notes for the user that are not progress (a stale lock taken over). */
  warn?: (line: string) => void;
  now?: () => number;
  signal?: AbortSignal;
}

export interface HarvestResult {
  report: HarvestReport;
  /** True when --limit or --max-time stopped the run before every candidate was seen. */
  stoppedEarly: boolean;
}

/** Identifies a captured call across runs (resume) and machines (sharding by function). */
export function candidateKey(s: { file: string; function: string; entry: string }): string {
  return sha256(`${s.file}\u0000${s.function}\u0000${s.entry}`);
}

export function functionKey(project: string, s: { file: string; function: string }): string {
  return sha256(`${project}\u0000${s.file}\u0000${s.function}`);
}

/** Near-duplicate key: same code up to renaming/comments, called with the same arguments. */
export function nearKey(astHash: string, entry: string): string {
  const open = entry.indexOf('(');
  return sha256(`${astHash}\u0000${open >= 0 ? entry.slice(open).trim() : entry}`);
}

function traceValuesText(trace: Trace): string {
  const parts: string[] = [];
  for (const step of trace.steps) {
    for (const v of Object.values(step.set ?? {})) parts.push(v.repr);
    if (step.value) parts.push(step.value.repr);
  }
  if (trace.outcome.kind === 'returned') parts.push(trace.outcome.value.repr);
  parts.push(trace.stdout.text, trace.stderr.text);
  return parts.join('\n');
}

interface Work {
  dir: string;
  calls: string;
  built: string;
  /** The digest of the calls file `built` was made from. */
  builtFrom: string;
  drops: string;
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function workFiles(out: string): Work {
  const dir = path.join(out, 'work');
  return {
    dir,
    calls: path.join(dir, 'calls.jsonl'),
    built: path.join(dir, 'built.jsonl'),
    builtFrom: path.join(dir, 'built.from'),
    drops: path.join(out, 'drops.jsonl'),
  };
}

function hasSummary(file: string): boolean {
  if (!fs.existsSync(file)) return false;
  const text = fs.readFileSync(file, 'utf8').trimEnd();
  const last = text.slice(text.lastIndexOf('\n') + 1);
  try {
    return (JSON.parse(last) as { kind?: string }).kind === 'summary';
  } catch {
    return false;
  }
}

/**
 * Runs the whole pipeline; see docs/harvest.md. One harvest per `--out`: the
 * store's lock is taken before anything runs or is written there and held to
 * the end, so a second harvest on the same directory is refused at once
 * (StoreBusyError) and never touches the first one's files.
 */
export async function harvest(options: HarvestOptions, deps: HarvestDeps): Promise<HarvestResult> {
  const store = SampleStore.open(options.out, { env: deps.env });
  if (store.tookOverFrom !== null) {
    deps.warn?.(
      `took over the lock of ${options.out}: the harvest that held it (pid ${store.tookOverFrom || 'unknown'}) is no longer running; it resumes where that one stopped`,
    );
  }
  try {
    return await harvestInto(store, options, deps);
  } finally {
    store.close();
  }
}

async function harvestInto(store: SampleStore, options: HarvestOptions, deps: HarvestDeps): Promise<HarvestResult> {
  const now = deps.now ?? Date.now;
  const progress = deps.progress ?? silentProgress;
  const started = now();
  const deadline = options.maxTimeS ? started + options.maxTimeS * 1000 : Infinity;
  const timings: StageTiming[] = [];
  let stoppedEarly = false;
  const timed = async <T>(stage: string, fn: () => Promise<T> | T, items: (r: T) => number): Promise<T> => {
    const t0 = now();
    const r = await fn();
    timings.push({ stage, seconds: (now() - t0) / 1000, items: items(r) });
    return r;
  };

  const project: ProjectInfo = await timed(
    'discover',
    () => discoverProject(options.project, deps.git, options.projectName),
    (p) => p.modules,
  );
  const work = workFiles(options.out);
  fs.mkdirSync(work.dir, { recursive: true });
  const pythonRun = {
    python: deps.python,
    tracerDir: deps.tracerDir,
    env: deps.env,
    ...(deps.jobEnv ? { jobEnv: deps.jobEnv } : {}),
    cwd: project.root,
    signal: deps.signal,
  };

  // 1. Run the project's tests with capture: a finished capture is reused, an
  // interrupted one (--max-time, a signal) continued, a cut one run again.
  progress.stage('capture: running the project tests');
  await timed(
    'capture',
    async () => {
      const problem = await pythonProblem(deps.python, deps.env, deps.tracerDir);
      if (problem) throw new HarvestProcessError(problem);
      const state = captureState(work.calls);
      if (state === 'complete') return;
      const remaining = Math.max(1000, deadline - now());
      const args = ['capture', '--root', project.root, '--out', work.calls, '--runner', options.runner ?? 'auto'];
      if (options.perFunction) args.push('--per-function', String(options.perFunction));
      if (state === 'interrupted') args.push('--resume');
      try {
        await runHarvestPython(args, { ...pythonRun, timeoutMs: Math.min(remaining, 30 * 60_000) });
      } catch (err) {
        // --max-time ended the test run: go on with what it captured (the next run continues it).
        if (!(err instanceof HarvestProcessError && err.timedOut && captureState(work.calls) === 'interrupted')) throw err;
      }
      if (captureState(work.calls) === 'interrupted') stoppedEarly = true;
    },
    () => 0,
  );
  const captured = readCaptured(work.calls);
  const summary = captured.summary;
  const errors = summary?.errors ?? [];
  if (summary && (summary.collectionErrors ?? 0) > 0) {
    const shown = errors.slice(0, 5).map((e) => `  ${e.where}: ${e.lines.slice(1).join(' | ') || e.lines[0] || ''}`.trimEnd());
    const more = (summary.collectionErrors ?? 0) > shown.length ? [`  … and ${(summary.collectionErrors ?? 0) - shown.length} more (${work.calls})`] : [];
    const head = `${summary.collectionErrors} test module(s) could not be collected (${summary.runner})`;
    if ((summary.testsRun ?? 0) === 0) {
      throw new HarvestProcessError(
        [`no tests ran: ${head}:`, ...shown, ...more, 'install what they import, or fix them, and run the harvest again'].join('\n'),
      );
    }
    deps.warn?.([`${head}; their tests did not run:`, ...shown, ...more].join('\n'));
  }
  progress.done(`${captured.calls.length} literal calls from ${summary?.testsRun ?? '?'} tests (${summary?.runner ?? '?'})`);

  // 2. Cut standalone samples and re-run each in a fresh interpreter.
  progress.stage('build: standalone samples');
  await timed(
    'build',
    async () => {
      // Reused only when built from these very calls (a continued capture has more) and the same --allow-import.
      const allow = (options.allowImports ?? []).flatMap((name) => ['--allow-import', name]);
      const calls = fs.readFileSync(work.calls, 'utf8');
      const from = sha256(allow.length ? `${calls}\u0000${allow.join(' ')}` : calls);
      if (hasSummary(work.built) && readText(work.builtFrom) === from) return;
      await runHarvestPython(['build', '--root', project.root, '--calls', work.calls, '--out', work.built, ...allow], {
        ...pythonRun,
        timeoutMs: Math.min(30 * 60_000, Math.max(60_000, deadline - now())),
      });
      fs.writeFileSync(work.builtFrom, from);
    },
    () => captured.calls.length,
  );
  const built = readBuilt(work.built);
  progress.done(`${built.samples.length} self-contained samples reproduce standalone`);

  // 3. Per-sample stages, resumable.
  // The values of this process's secret-looking variables, whatever their shape.
  const envSecrets = environmentSecrets(deps.env);
  const dropLog = new JsonlAppender(work.drops);
  const earlier = readJsonl(work.drops, (v) => DropEntrySchema.parse(v)).items;
  const decided = new Set(earlier.map((d) => d.candidate));
  const nearInRun = new Set<string>();
  const exactInRun = new Set<string>();

  const todo: BuiltSample[] = built.samples.filter((s) => {
    if (!inShard(functionKey(project.name, s), options.shard)) return false;
    const key = candidateKey(s);
    return !store.hasCandidate(key) && !decided.has(key);
  });
  const stageSeconds: Record<string, number> = { scan: 0, dedup: 0, trace: 0, confirm: 0, questions: 0, model: 0, store: 0 };
  const drop = (s: BuiltSample, stage: string, reason: string, redactions = 0) => {
    const entry: DropEntry = { candidate: candidateKey(s), stage, reason, file: s.file, function: s.function, redactions };
    dropLog.append(entry);
    decided.add(entry.candidate);
  };
  const tick = async <T>(stage: string, fn: () => Promise<T> | T): Promise<T> => {
    const t0 = now();
    try {
      return await fn();
    } finally {
      stageSeconds[stage] = (stageSeconds[stage] ?? 0) + (now() - t0) / 1000;
    }
  };

  // One tracer per run: a worker's hash seed is fixed when it starts.
  const hashSeed = options.hashSeed ?? DEFAULT_HASH_SEED;
  // Two other seeds by default, whichever seed the sample runs under.
  const checkSeeds = options.checkSeeds
    ? options.checkSeeds.filter((x) => x !== hashSeed)
    : [...DEFAULT_CHECK_SEEDS, 3].filter((x) => x !== hashSeed).slice(0, 2);
  const primaryRun: TraceRun = { hashSeed, rerun: false };
  const checkRuns: TraceRun[] = [{ hashSeed, rerun: true }, ...checkSeeds.map((x) => ({ hashSeed: x, rerun: false }))];
  const tracers = new Map<string, SeededTracer>();
  const tracerFor = (run: TraceRun): SeededTracer => {
    const key = `${run.hashSeed}:${run.rerun}`;
    let t = tracers.get(key);
    if (!t) {
      t =
        deps.tracerFor?.(run) ??
        new TracerPool({
          python: deps.python,
          tracerDir: deps.tracerDir,
          env: { ...deps.env, PYTHONHASHSEED: String(run.hashSeed) },
          jobEnv: { ...deps.jobEnv, ...PRIMARY_JOB_ENV, ...(run.rerun ? RERUN_JOB_ENV : {}) },
          size: Math.max(1, options.concurrency ?? 2),
        });
      tracers.set(key, t);
    }
    return t;
  };
  const localPath = localPathFinder([project.root, deps.tracerDir, process.cwd(), path.resolve(options.out)], deps.env);
  const heldTrivial: { key: string; sample: BuiltSample; store: () => Promise<void> }[] = [];

  const processOne = async (s: BuiltSample): Promise<void> => {
    // Credentials: in the code, the call, the captured result.
    let code = s.code;
    let entry = s.entry;
    let result = s.result;
    let redactions = 0;
    const clean = await tick('scan', () => {
      const findings = [code, entry, result].map((t) => findSecrets(t, envSecrets));
      const count = findings.reduce((n, f) => n + f.length, 0);
      if (count === 0) return true;
      if ((options.secrets ?? 'drop') === 'drop') return false;
      code = redactCredentials(code, findings[0]);
      entry = redactCredentials(entry, findings[1]);
      result = redactCredentials(result, findings[2]);
      redactions = count;
      return true;
    });
    if (!clean) return drop(s, 'scan', 'credential');

    const exact = exactKey(code, entry);
    const near = nearKey(s.astHash, entry);
    const dup = await tick('dedup', () => {
      if (store.hasExact(exact) || exactInRun.has(exact)) return 'duplicate';
      if (store.hasNear(near) || nearInRun.has(near)) return 'near_duplicate';
      exactInRun.add(exact);
      nearInRun.add(near);
      return null;
    });
    if (dup) return drop(s, 'dedup', dup, redactions);

    // Code that reads the clock, the environment, argv or paths has no fixed truth.
    const dependence = machineDependence(code);
    if (dependence) return drop(s, 'determinism', dependence, redactions);

    // The traced standalone re-run must reproduce the captured result.
    const job = (run: TraceRun) => ({
      path: path.basename(s.file),
      source: code,
      entry: { kind: 'call' as const, expr: entry },
      cwd: run.rerun ? RERUN_CWD : os.tmpdir(),
    });
    let trace: Trace;
    try {
      trace = await tick('trace', () => tracerFor(primaryRun).trace(job(primaryRun), deps.signal));
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      return drop(s, 'trace', 'trace_error', redactions);
    }
    const outcome = trace.outcome;
    if (outcome.kind !== 'returned') return drop(s, 'trace', outcome.kind === 'limit' ? `trace_limit_${outcome.limit}` : `trace_${outcome.kind}`, redactions);
    // The tracer names a type by its module (`datetime.date`, `__source__.Priority`); capture by its name.
    const sameType = outcome.value.type === s.resultType || outcome.value.type.endsWith(`.${s.resultType}`);
    if (outcome.value.repr !== result || !sameType) return drop(s, 'trace', 'trace_mismatch', redactions);
    if (findSecrets(traceValuesText(trace), envSecrets).length > 0) return drop(s, 'scan', 'credential_in_trace', redactions);

    // The same call again: a second run in a changed environment, and under the other hash seeds.
    const others = await tick('confirm', () =>
      Promise.all(
        checkRuns.map(async (run) => {
          try {
            return { run, trace: await tracerFor(run).trace(job(run), deps.signal) };
          } catch (err) {
            if (deps.signal?.aborted) throw err;
            return { run, trace: undefined };
          }
        }),
      ),
    );
    for (const o of others) {
      const v = o.trace?.outcome;
      if (!v || v.kind !== 'returned' || v.value.repr !== outcome.value.repr || v.value.type !== outcome.value.type) {
        return drop(s, 'determinism', unstableReason('result', o.run), redactions);
      }
    }

    const asked = await tick('questions', () => deps.questioner(trace, { code, entry, function: s.function }));
    if ('skip' in asked) return drop(s, 'questions', asked.skip, redactions);
    // Every asked question's truth must be the same in every other run.
    const moved = await tick('confirm', () => {
      const questions = asked.questions
        .map((q) => QuestionSchema.safeParse(q))
        .filter((r) => r.success)
        .map((r) => r.data as Question);
      return others.find((o) => movedQuestions(questions, o.trace!).length > 0);
    });
    if (moved) return drop(s, 'determinism', unstableReason('truth', moved.run), redactions);

    const trivial = triviality(trace);
    const structural: Difficulty = { ...structuralDifficulty(trace, s.nesting), ...(trivial ? { trivial } : {}) };
    let answers: ModelAnswer[] = [];
    let difficulty = structural;
    if (deps.scorer) {
      const scorer = deps.scorer;
      answers = await tick('model', () => scorer.score(asked, trace, deps.signal));
      const full = answers.filter((a) => (a.rIo === null || a.rIo === 1) && (a.rWhite === null || a.rWhite === 1)).length;
      const passRate = answers.length ? full / answers.length : 0;
      difficulty = { ...structural, passRate, k: answers.length };
      if (options.passBand && !inBand(passRate, options.passBand)) return drop(s, 'model', 'outside_pass_band', redactions);
    }

    const provenance = {
      project: project.name,
      repository: project.repository,
      commit: project.commit,
      file: s.file,
      function: s.function,
      line: s.line,
      license: project.license,
      test: s.test,
      ...(s.imports && Object.keys(s.imports).length ? { imports: s.imports } : {}),
    };
    const input = buildSample({
      provenance,
      code,
      entry,
      result: { repr: result, type: s.resultType },
      trace,
      seeds: { hashSeed, confirmed: checkSeeds },
      questions: asked.questions,
      groundTruth: asked.groundTruth,
      prompt: asked.prompt,
      reference: asked.reference,
      answers,
      difficulty,
      split: splitFor(provenance, options.splits),
      hashes: { exact, near, candidate: candidateKey(s) },
      maxFrames: options.maxFrames,
      redactions,
    });
    const leaked = await tick('store', () => localPath(JSON.stringify(input)));
    if (leaked) return drop(s, 'store', 'local_path', redactions);
    const storeIt = () =>
      tick('store', () => {
        const added = store.add(input);
        if (!added.added)
          drop(s, 'store', added.reason === 'duplicate' ? 'duplicate' : added.reason === 'credential' ? 'credential_in_record' : 'invalid_record', redactions);
      });
    // Trivial samples wait for the end, where their share of the project is known.
    if (trivial) heldTrivial.push({ key: candidateKey(s), sample: s, store: storeIt });
    else await storeIt();
  };

  progress.stage('samples: trace, questions, store', todo.length);
  const t0 = now();
  let next = 0;
  let finished = 0;
  const limitReached = () => options.limit !== undefined && store.size >= options.limit;
  // Trivial samples kept: one for a function that has no other sample (a
  // function is not lost for being small), the first by candidate hash; none
  // for a function that has a sample that teaches more. Decided per function,
  // so shards (by function) and resumes give the same dataset.
  const storeTrivial = async () => {
    const stored = readJsonl(path.join(options.out, STORE_FILE), (v) => v as { provenance?: { file?: string; function?: string } }).items;
    const fnOf = (r: { file?: string; function?: string }) => `${r.file ?? ''}\u0000${r.function ?? ''}`;
    const represented = new Set(stored.map((r) => fnOf(r.provenance ?? {})));
    const held = heldTrivial.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const h of held) {
      if (limitReached()) return;
      const fn = fnOf(h.sample);
      if (represented.has(fn)) drop(h.sample, 'store', 'trivial_cap');
      else {
        represented.add(fn);
        await h.store();
      }
    }
  };

  const worker = async () => {
    for (;;) {
      if (deps.signal?.aborted) return;
      if (limitReached() || now() > deadline) {
        if (next < todo.length) stoppedEarly = true;
        return;
      }
      const s = todo[next++];
      if (!s) return;
      await processOne(s);
      finished += 1;
      progress.tick(finished, `kept ${store.size}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
    // Only a run that saw every candidate knows the project's share; a cut one leaves them for the resume.
    if (!deps.signal?.aborted && !stoppedEarly) await storeTrivial();
  } finally {
    dropLog.close();
    for (const t of tracers.values()) t.close?.();
  }
  progress.done(`${finished} processed, store holds ${store.size}`);
  timings.push({ stage: 'samples', seconds: (now() - t0) / 1000, items: finished });
  for (const [stage, seconds] of Object.entries(stageSeconds)) timings.push({ stage: `samples.${stage}`, seconds, items: 0 });

  const report = buildReport({
    project,
    out: options.out,
    capture: captured.summary,
    buildDrops: built.drops,
    builtSamples: built.samples.length,
    shardSkipped: built.samples.filter((s) => !inShard(functionKey(project.name, s), options.shard)).length,
    shard: options.shard ? `${options.shard.index}/${options.shard.count}` : null,
    timings,
    totalSeconds: (now() - started) / 1000,
    stoppedEarly,
    scorer: deps.scorer?.label ?? null,
  });
  return { report, stoppedEarly };
}

export { shardOf };
