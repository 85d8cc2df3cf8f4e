// The synthesis pipeline: specs → a model's programs (online, or imported from
// a Batch result file) → parse → static checks → dedup → traced runs under the
// OS sandbox (limits, literal result) → determinism (other hash seeds, a
// second run) → questions → difficulty (k answers' pass rate) → the sample
// store; optional coverage-guided input mutation. Every drop has a reason.
//
// Resumable: answers are kept in work/answers.jsonl as they arrive, every
// candidate kept or dropped is remembered (store + drops.jsonl), so a run
// killed at any point and started again asks no model twice and ends with the
// same dataset. Dedup decisions are taken in spec order, so the online and the
// batch road give the same dataset for the same answers.
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import type { Difficulty, ModelAnswer, Provenance } from '../dataset/record';
import { exactKey, sha256, splitFor } from '../dataset/record';
import { buildSample } from '../dataset/sample';
import { JsonlAppender, readJsonl, repairTail, SampleStore } from '../dataset/store';
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
} from '../harvest/determinism';
import { inBand, structuralDifficulty, type PassBand } from '../harvest/difficulty';
import type { AnswerScorer, Questioner } from '../harvest/pipeline';
import { nearKey } from '../harvest/pipeline';
import { silentProgress, type Progress } from '../harvest/progress';
import type { ChatMessage } from '../model/prompt';
import { movedQuestions, QuestionSchema, triviality, type Question } from '../questions';
import { TracerError, TracerPool } from '../trace/runner';
import type { Limits, Trace } from '../trace/schema';
import { parseCallsAnswer, parseProgramAnswer } from './answer';
import type { Constraints, Spec } from './constraints';
import { inputsId, inputsPrompt, synthesisPrompt, type ProgramOf } from './prompt';

/** What one spec's request brought back, kept in work/answers.jsonl. */
export const AnswerRecordSchema = z.object({
  id: z.string(),
  texts: z.array(z.string()),
  usage: z.object({ promptTokens: z.number(), completionTokens: z.number() }).optional(),
  seconds: z.number().optional(),
  via: z.enum(['online', 'batch']),
  /** The request failed (a Batch line's error): the spec yields nothing. */
  error: z.string().optional(),
});
export type AnswerRecord = z.infer<typeof AnswerRecordSchema>;

export const SynthDropSchema = z.object({
  candidate: z.string(),
  stage: z.string(),
  reason: z.string(),
  detail: z.string().optional(),
  spec: z.string(),
  level: z.number().nullable(),
  /** A mutated input's drop (the funnel of the model's calls leaves them out). */
  source: z.literal('mutated').optional(),
});
export type SynthDrop = z.infer<typeof SynthDropSchema>;

/** Asks a model for one spec's program(s). */
export interface AnswerSource {
  label: string;
  answer(messages: ChatMessage[], signal?: AbortSignal): Promise<{ texts: string[]; usage: { promptTokens: number; completionTokens: number } }>;
}

export interface SynthesisOptions {
  out: string;
  specs: readonly Spec[];
  constraints: Constraints;
  /** Stop once the store holds this many samples. */
  limit?: number;
  /** Stop starting new work after this many seconds. */
  maxTimeS?: number;
  hashSeed?: number;
  checkSeeds?: readonly number[];
  /** Keep only samples whose pass rate lies in the band (needs a scorer). */
  passBand?: PassBand;
  /** Mutated inputs tried per kept call (0: none). */
  mutate?: number;
  /** Second round: this many more calls asked of the model per program that yielded a sample (0: none). */
  inputs?: number;
  /** Seed of the input mutation (default: the spec's seed). */
  mutateSeed?: number;
  splits?: { validation: number; test: number };
  concurrency?: number;
  maxFrames?: number;
  /** Limits of every traced run (defaults: the tracer's, with 200,000 steps). */
  limits?: Limits;
  /**
   * Where to append every call that reaches the global dedup, in decision order: {candidate, spec, exact, near}.
   * A sharded run (python -m execverify.ray_synthesize) redoes the dedup across shards from it, in spec order.
   */
  dedupLog?: string;
}

export interface SynthesisDeps {
  python: string;
  tracerDir: string;
  env: NodeJS.ProcessEnv;
  /** Online: asks for the specs that have no answer yet. Without it, only stored (imported) answers are used. */
  source?: AnswerSource;
  questioner: Questioner;
  scorer?: AnswerScorer;
  progress?: Progress;
  now?: () => number;
  signal?: AbortSignal;
  warn?: (line: string) => void;
}

export interface Work {
  answers: string;
  drops: string;
}

export function workFiles(out: string): Work {
  return { answers: path.join(out, 'work', 'answers.jsonl'), drops: path.join(out, 'drops.jsonl') };
}

/** The answers stored so far, by spec id (the first record of an id wins). */
export function readAnswers(file: string): Map<string, AnswerRecord> {
  const out = new Map<string, AnswerRecord>();
  for (const r of readJsonl(file, (v) => AnswerRecordSchema.parse(v)).items) if (!out.has(r.id)) out.set(r.id, r);
  return out;
}

/** One (program, call) to run: a model's example call, or a mutation of one. */
export interface Candidate {
  key: string;
  code: string;
  call: string;
  function: string;
  astHash: string;
  nesting: number;
  provenance: Provenance;
  /** Coverage is accumulated per program (and mutation is guided by it). */
  program: string;
  level: number | null;
  spec: string;
  seed: number;
}

/** What synthesis.py's `synth_analyse` says of one program and its calls (the worker's answer is data: validated). */
export const AnalysisSchema = z.object({
  problem: z.string().nullable(),
  message: z.string().optional(),
  functions: z.array(z.string()).optional(),
  imports: z.array(z.string()).optional(),
  forbidden: z.array(z.string()).optional(),
  astHash: z.string().optional(),
  nesting: z.number().int().nonnegative().optional(),
  calls: z.array(z.object({ function: z.string().nullable(), problem: z.string().nullable() })).optional(),
});
export type Analysis = z.infer<typeof AnalysisSchema>;
/** The stages a candidate passes before dedup (and dedup itself): one dropped there never registered its keys. */
const BEFORE_DEDUP = new Set(['model', 'parse', 'analyse', 'calls', 'dedup']);
const AnalyseResultSchema = z.object({ results: z.array(AnalysisSchema) });
const MutateResultSchema = z.object({ results: z.array(z.object({ calls: z.array(z.string()) })) });

/** Lines and branch edges (line → next line in the same frame) of the program's own frames. */
export function coverageOf(trace: Trace): Set<string> {
  const out = new Set<string>();
  const last = new Map<number, number>();
  for (const s of trace.steps) {
    if (s.file !== 0 || s.event !== 'line') continue;
    out.add(`${s.fn}:${s.line}`);
    const prev = last.get(s.frame);
    if (prev !== undefined) out.add(`${s.fn}:${prev}>${s.line}`);
    last.set(s.frame, s.line);
  }
  return out;
}

/** Counters of this run that the files do not hold (the files hold the rest). */
export interface RunCounters {
  requested: number;
  requestFailures: number;
  mutationTried: number;
  mutationKept: number;
  /** Lines + edges covered by the model's calls, and by the calls plus the kept mutations. */
  coverageBefore: number;
  coverageAfter: number;
  stageSeconds: Record<string, number>;
}

/**
 * The candidate stages, shared by synthesis and `harvest --mutate`: dedup,
 * determinism, the traced runs, questions, difficulty, mutation, the store.
 */
export class CandidateProcessor {
  readonly counters: RunCounters = {
    requested: 0,
    requestFailures: 0,
    mutationTried: 0,
    mutationKept: 0,
    coverageBefore: 0,
    coverageAfter: 0,
    stageSeconds: {},
  };
  private readonly dropLog: JsonlAppender;
  private readonly decided = new Set<string>();
  /** Candidates dropped at dedup or before it: they never registered their keys. */
  private readonly neverDeduped = new Set<string>();
  private readonly exactInRun = new Set<string>();
  private readonly nearInRun = new Set<string>();
  private readonly coverage = new Map<string, Set<string>>();
  private readonly tracers = new Map<string, TracerPool>();
  private readonly hashSeed: number;
  private readonly checkSeeds: number[];
  private readonly checkRuns: TraceRun[];
  private readonly localPath: (text: string) => string | undefined;
  private readonly now: () => number;

  constructor(
    readonly store: SampleStore,
    private readonly options: { dropsFile?: string; jobEnv?: Record<string, string> } & Pick<
      SynthesisOptions,
      'out' | 'limit' | 'hashSeed' | 'checkSeeds' | 'passBand' | 'mutate' | 'mutateSeed' | 'splits' | 'concurrency' | 'maxFrames' | 'limits'
    >,
    private readonly deps: Pick<SynthesisDeps, 'python' | 'tracerDir' | 'env' | 'questioner' | 'scorer' | 'now' | 'signal'>,
  ) {
    const dropsFile = options.dropsFile ?? workFiles(options.out).drops;
    repairTail(dropsFile); // a kill's torn last line, cut before the next append
    this.dropLog = new JsonlAppender(dropsFile);
    for (const d of readJsonl(dropsFile, (v) => SynthDropSchema.parse(v)).items) this.remember(d);
    this.hashSeed = options.hashSeed ?? DEFAULT_HASH_SEED;
    this.checkSeeds = options.checkSeeds
      ? options.checkSeeds.filter((x) => x !== this.hashSeed)
      : [...DEFAULT_CHECK_SEEDS, 3].filter((x) => x !== this.hashSeed).slice(0, 2);
    this.checkRuns = [{ hashSeed: this.hashSeed, rerun: true }, ...this.checkSeeds.map((x) => ({ hashSeed: x, rerun: false }))];
    this.localPath = localPathFinder([deps.tracerDir, process.cwd(), path.resolve(options.out)], deps.env);
    this.now = deps.now ?? Date.now;
  }

  /** The tracer of one run: a worker's hash seed is fixed when it starts. Its pool also serves the synthesis ops. */
  tracerFor(run: TraceRun): TracerPool {
    const key = `${run.hashSeed}:${run.rerun}`;
    let t = this.tracers.get(key);
    if (!t) {
      t = new TracerPool({
        python: this.deps.python,
        tracerDir: this.deps.tracerDir,
        env: { ...this.deps.env, PYTHONHASHSEED: String(run.hashSeed) },
        jobEnv: { ...this.options.jobEnv, ...PRIMARY_JOB_ENV, ...(run.rerun ? RERUN_JOB_ENV : {}) },
        size: Math.max(1, this.options.concurrency ?? 2),
      });
      this.tracers.set(key, t);
    }
    return t;
  }

  get primary(): TracerPool {
    return this.tracerFor({ hashSeed: this.hashSeed, rerun: false });
  }

  isDecided(key: string): boolean {
    return this.decided.has(key) || this.store.hasCandidate(key);
  }

  /**
   * Whether an earlier run decided this candidate. One that got past dedup
   * then (stored, or dropped by a later stage) registers its keys again, so a
   * resumed run drops its later copies as one uninterrupted run would.
   */
  decidedBefore(c: Candidate): boolean {
    if (!this.isDecided(c.key)) return false;
    if (!this.neverDeduped.has(c.key)) {
      this.exactInRun.add(exactKey(c.code, c.call));
      this.nearInRun.add(nearKey(c.astHash, c.call));
    }
    return true;
  }

  drop(entry: SynthDrop): void {
    if (this.decided.has(entry.candidate)) return;
    this.dropLog.append(entry);
    this.remember(entry);
  }

  private remember(entry: SynthDrop): void {
    this.decided.add(entry.candidate);
    if (BEFORE_DEDUP.has(entry.stage)) this.neverDeduped.add(entry.candidate);
  }

  async tick<T>(stage: string, fn: () => Promise<T> | T): Promise<T> {
    const t0 = this.now();
    try {
      return await fn();
    } finally {
      this.counters.stageSeconds[stage] = (this.counters.stageSeconds[stage] ?? 0) + (this.now() - t0) / 1000;
    }
  }

  /** Static checks of programs and their calls (synthesis.py in the sandboxed worker). */
  async analyse(items: { code: string; calls: string[] }[]): Promise<Analysis[]> {
    if (items.length === 0) return [];
    const res = AnalyseResultSchema.parse(await this.tick('analyse', () => this.primary.request('synth_analyse', { items }, this.deps.signal)));
    if (res.results.length !== items.length) throw new Error(`synth_analyse answered ${res.results.length} results for ${items.length} programs`);
    return res.results;
  }

  async mutations(call: string, seed: number, count: number): Promise<string[]> {
    const res = MutateResultSchema.parse(await this.primary.request('synth_mutate', { items: [{ call, seed, count }] }, this.deps.signal));
    return res.results[0]?.calls ?? [];
  }

  /** Dedup, synchronously (callers keep the order): the reason a candidate is a copy, or null after registering it. */
  dedup(c: Candidate, scope: 'global' | 'program' = 'global'): 'duplicate' | 'near_duplicate' | null {
    const exact = exactKey(c.code, c.call);
    const near = nearKey(c.astHash, c.call);
    if (this.store.hasExact(exact) || this.exactInRun.has(exact)) return 'duplicate';
    if (scope === 'global' && (this.store.hasNear(near) || this.nearInRun.has(near))) return 'near_duplicate';
    this.exactInRun.add(exact);
    this.nearInRun.add(near);
    return null;
  }

  private job(c: Candidate, run: TraceRun, call = c.call) {
    return {
      path: path.basename(c.provenance.file),
      source: c.code,
      entry: { kind: 'call' as const, expr: call },
      cwd: run.rerun ? RERUN_CWD : os.tmpdir(),
      // Steps bound an endless loop in a fraction of a second; time limits stay the tracer's (a loaded machine is slow, not wrong).
      limits: { steps: 200_000, ...this.options.limits },
    };
  }

  private dropOf(c: Candidate, stage: string, reason: string, detail?: string): SynthDrop {
    const source = c.provenance.synthesis?.source === 'mutated' ? { source: 'mutated' as const } : {};
    return { candidate: c.key, stage, reason, ...(detail ? { detail } : {}), spec: c.spec, level: c.level, ...source };
  }

  /** Why a traced run is not a sample, or null when it returned a literal. */
  static outcomeProblem(trace: Trace): string | null {
    const o = trace.outcome;
    if (o.kind === 'returned') return o.value.literal ? null : 'non_literal_result';
    if (o.kind === 'limit') return `limit_${o.limit}`;
    return o.kind; // raised, exited, crashed, tampered
  }

  /** Runs one candidate through every stage after dedup; true when it was stored. */
  async process(c: Candidate): Promise<boolean> {
    const drop = (stage: string, reason: string, detail?: string) => {
      this.drop(this.dropOf(c, stage, reason, detail));
      return false;
    };
    const dependence = machineDependence(c.code);
    if (dependence) return drop('determinism', 'nondeterministic', dependence);

    const primaryRun: TraceRun = { hashSeed: this.hashSeed, rerun: false };
    let trace: Trace;
    try {
      trace = await this.tick('trace', () => this.primary.trace(this.job(c, primaryRun), this.deps.signal));
    } catch (err) {
      if (this.deps.signal?.aborted) throw err;
      return drop(
        'trace',
        err instanceof TracerError && err.code === 'syntax_error' ? 'syntax' : 'trace_error',
        err instanceof TracerError ? err.code : undefined,
      );
    }
    const problem = CandidateProcessor.outcomeProblem(trace);
    if (problem) return drop('trace', problem);
    const value = trace.outcome.kind === 'returned' ? trace.outcome.value : undefined;

    const others = await this.tick('confirm', () =>
      Promise.all(
        this.checkRuns.map(async (run) => {
          try {
            return { run, trace: await this.tracerFor(run).trace(this.job(c, run), this.deps.signal) };
          } catch (err) {
            if (this.deps.signal?.aborted) throw err;
            return { run, trace: undefined };
          }
        }),
      ),
    );
    for (const o of others) {
      const v = o.trace?.outcome;
      if (!v || v.kind !== 'returned' || v.value.repr !== value!.repr || v.value.type !== value!.type) {
        return drop('confirm', 'nondeterministic', unstableReason('result', o.run));
      }
    }

    const asked = await this.tick('questions', () => this.deps.questioner(trace, { code: c.code, entry: c.call, function: c.function }));
    if ('skip' in asked) return drop('questions', 'no_questions', asked.skip);
    const questions = asked.questions
      .map((q) => QuestionSchema.safeParse(q))
      .filter((r) => r.success)
      .map((r) => r.data as Question);
    const moved = others.find((o) => movedQuestions(questions, o.trace!).length > 0);
    if (moved) return drop('questions', 'nondeterministic', unstableReason('truth', moved.run));

    const trivial = triviality(trace);
    const structural: Difficulty = { ...structuralDifficulty(trace, c.nesting), ...(trivial ? { trivial } : {}) };
    let difficulty = structural;
    let answers: ModelAnswer[] = [];
    if (this.deps.scorer) {
      const scorer = this.deps.scorer;
      answers = await this.tick('difficulty', () => scorer.score(asked, trace, this.deps.signal));
      const full = answers.filter((a) => (a.rIo === null || a.rIo === 1) && (a.rWhite === null || a.rWhite === 1)).length;
      const passRate = answers.length ? full / answers.length : 0;
      difficulty = { ...structural, passRate, k: answers.length };
      if (this.options.passBand && !inBand(passRate, this.options.passBand)) return drop('difficulty', 'outside_pass_band', `pass rate ${passRate}`);
    }

    const input = buildSample({
      provenance: c.provenance,
      code: c.code,
      entry: c.call,
      result: { repr: value!.repr, type: value!.type },
      trace,
      seeds: { hashSeed: this.hashSeed, confirmed: this.checkSeeds },
      questions: asked.questions,
      groundTruth: asked.groundTruth,
      prompt: asked.prompt,
      reference: asked.reference,
      answers,
      difficulty,
      split: splitFor(c.provenance, this.options.splits),
      hashes: { exact: exactKey(c.code, c.call), near: nearKey(c.astHash, c.call), candidate: c.key },
      maxFrames: this.options.maxFrames,
    });
    const leaked = this.localPath(JSON.stringify(input));
    if (leaked) return drop('store', 'local_path');
    // --limit is exact: a candidate that finds the store full stays undecided (a resumed run takes it).
    if (this.options.limit !== undefined && this.store.size >= this.options.limit) return false;
    const added = this.store.add(input);
    if (!added.added)
      return drop('store', added.reason === 'duplicate' ? 'duplicate' : added.reason === 'credential' ? 'credential' : 'invalid_record', added.message);

    const covered = this.coverage.get(c.program) ?? new Set<string>();
    this.coverage.set(c.program, covered);
    const before = covered.size;
    for (const e of coverageOf(trace)) covered.add(e);
    if (c.provenance.synthesis?.source !== 'mutated') this.counters.coverageBefore += covered.size - before;
    this.counters.coverageAfter += covered.size - before;
    if ((this.options.mutate ?? 0) > 0 && c.provenance.synthesis?.source !== 'mutated') await this.mutate(c);
    return true;
  }

  /**
   * Tries `mutate` mutated calls of a stored candidate; one is kept when it
   * runs within limits to a literal and reaches a line or a branch edge of
   * the program not yet covered; kept ones go through every stage themselves.
   */
  /** Mutation from a sample already stored (`harvest --mutate`): its run gives the coverage to beat. */
  async mutateStored(c: Candidate): Promise<void> {
    let trace: Trace;
    try {
      trace = await this.tick('mutate', () => this.primary.trace(this.job(c, { hashSeed: this.hashSeed, rerun: false }), this.deps.signal));
    } catch (err) {
      if (this.deps.signal?.aborted) throw err;
      return;
    }
    const covered = this.coverage.get(c.program) ?? new Set<string>();
    this.coverage.set(c.program, covered);
    const before = covered.size;
    for (const e of coverageOf(trace)) covered.add(e);
    this.counters.coverageBefore += covered.size - before;
    this.counters.coverageAfter += covered.size - before;
    await this.mutate(c);
  }

  private async mutate(c: Candidate): Promise<void> {
    const count = this.options.mutate ?? 0;
    const seed = this.options.mutateSeed ?? c.seed;
    const calls = await this.tick('mutate', () => this.mutations(c.call, seed, count));
    const covered = this.coverage.get(c.program)!;
    const run: TraceRun = { hashSeed: this.hashSeed, rerun: false };
    for (const call of calls) {
      if (this.deps.signal?.aborted) return;
      const key = sha256(`mutated\u0000${c.key}\u0000${call}`);
      // A resumed run: a mutant kept before counts its coverage again (so the
      // next ones are judged as they were); one rejected before stays rejected.
      if (this.store.hasCandidate(key)) {
        try {
          for (const e of coverageOf(await this.tick('mutate', () => this.primary.trace(this.job(c, run, call), this.deps.signal)))) covered.add(e);
        } catch (err) {
          if (this.deps.signal?.aborted) throw err;
        }
        continue;
      }
      if (this.decided.has(key)) continue;
      this.counters.mutationTried += 1;
      const reject = (reason: string) => this.drop({ candidate: key, stage: 'mutate', reason, spec: c.spec, level: c.level });
      let trace: Trace;
      try {
        trace = await this.tick('mutate', () => this.primary.trace(this.job(c, run, call), this.deps.signal));
      } catch (err) {
        if (this.deps.signal?.aborted) throw err;
        reject('mutant_trace_error');
        continue;
      }
      const problem = CandidateProcessor.outcomeProblem(trace);
      if (problem) {
        reject(`mutant_${problem}`);
        continue;
      }
      if (![...coverageOf(trace)].some((e) => !covered.has(e))) {
        reject('no_new_coverage');
        continue;
      }
      const m: Candidate = {
        ...c,
        key,
        call,
        provenance: {
          ...c.provenance,
          synthesis: {
            source: 'mutated',
            level: c.level,
            seed,
            spec: c.provenance.synthesis?.spec ?? c.spec,
            constraintsVersion: c.provenance.synthesis?.constraintsVersion ?? null,
            constraints: c.provenance.synthesis?.constraints ?? null,
            from: c.call,
          },
        },
      };
      const dup = this.dedup(m, 'program');
      if (dup) {
        reject(dup);
        continue;
      }
      if (await this.process(m)) this.counters.mutationKept += 1;
    }
  }

  async close(): Promise<void> {
    this.dropLog.close();
    await Promise.all([...this.tracers.values()].map((t) => t.close()));
  }
}

/** Identifies one answer of one spec (its parse and static-check drops), and one of its calls. */
export function answerKey(spec: string, answer: number): string {
  return sha256(`${spec}\u0000${answer}`);
}
export function callKey(spec: string, answer: number, call: string): string {
  return sha256(`${spec}\u0000${answer}\u0000${call.trim()}`);
}

export interface SynthesisResult {
  stoppedEarly: boolean;
  counters: RunCounters;
}

/** One synthesis per `--out`: the store's lock is held from start to end (StoreBusyError for a second one). */
export async function synthesize(options: SynthesisOptions, deps: SynthesisDeps): Promise<SynthesisResult> {
  const store = SampleStore.open(options.out, { env: deps.env });
  if (store.tookOverFrom !== null) deps.warn?.(`took over the lock of ${options.out}: the run that held it is gone; resuming where it stopped`);
  const processor = new CandidateProcessor(store, options, deps);
  try {
    return await synthesizeInto(processor, options, deps);
  } finally {
    await processor.close();
    store.close();
  }
}

async function synthesizeInto(p: CandidateProcessor, options: SynthesisOptions, deps: SynthesisDeps): Promise<SynthesisResult> {
  const now = deps.now ?? Date.now;
  const progress = deps.progress ?? silentProgress;
  const deadline = options.maxTimeS ? now() + options.maxTimeS * 1000 : Infinity;
  const work = workFiles(options.out);
  repairTail(work.answers);
  const known = readAnswers(work.answers);
  const answerLog = new JsonlAppender(work.answers);
  const dedupLog = options.dedupLog ? new JsonlAppender(options.dedupLog) : undefined;
  let stoppedEarly = false;
  const limitReached = () => options.limit !== undefined && p.store.size >= options.limit;

  // Dedup decisions in spec order: spec i's candidates are checked once spec i-1's have been.
  const gates: Promise<void>[] = [];
  const opened: (() => void)[] = [];
  for (let i = 0; i < options.specs.length; i++) gates.push(new Promise<void>((resolve) => opened.push(resolve)));

  const answersOf = async (spec: Spec): Promise<AnswerRecord | undefined> => {
    const have = known.get(spec.id);
    if (have || !deps.source) return have;
    const t0 = now();
    p.counters.requested += 1;
    try {
      const reply = await p.tick('model', () => deps.source!.answer(synthesisPrompt(spec, options.constraints), deps.signal));
      const record: AnswerRecord = { id: spec.id, texts: reply.texts, usage: reply.usage, seconds: (now() - t0) / 1000, via: 'online' };
      answerLog.append(record);
      known.set(spec.id, record);
      return record;
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      p.counters.requestFailures += 1;
      deps.warn?.(`${spec.id}: the request failed: ${err instanceof Error ? err.message : String(err)} (a resumed run asks again)`);
      return undefined;
    }
  };

  const candidateOf = (spec: Spec, answer: number, code: string, call: string, fn: string, a: Analysis, round: 1 | 2): Candidate => ({
    key: callKey(spec.id, answer, call),
    code,
    call: call.trim(),
    function: fn,
    astHash: a.astHash!,
    nesting: a.nesting ?? 0,
    program: answerKey(spec.id, answer),
    level: spec.level,
    spec: spec.id,
    seed: spec.seed,
    provenance: {
      project: 'synthesized',
      repository: null,
      commit: null,
      file: `${spec.id}.py`,
      function: fn,
      line: null,
      license: null,
      test: null,
      synthesis: {
        source: 'synthesized',
        level: spec.level,
        seed: spec.seed,
        spec: spec.id,
        constraintsVersion: spec.constraintsVersion,
        constraints: spec.constraints,
        ...(round === 2 ? { round } : {}),
      },
    },
  });

  /** Round 2: more calls of a program that yielded a sample, asked of the model (or imported), through the same stages. */
  const secondRound = async (spec: Spec, answer: number, program: ProgramOf): Promise<void> => {
    const id = inputsId(spec.id, answer);
    let record = known.get(id);
    if (!record && deps.source) {
      const t0 = now();
      p.counters.requested += 1;
      try {
        const reply = await p.tick('model', () => deps.source!.answer(inputsPrompt(spec.id, answer, program, options.inputs!), deps.signal));
        record = { id, texts: reply.texts, usage: reply.usage, seconds: (now() - t0) / 1000, via: 'online' };
        answerLog.append(record);
        known.set(id, record);
      } catch (err) {
        if (deps.signal?.aborted) throw err;
        p.counters.requestFailures += 1;
        return;
      }
    }
    if (!record || record.error) return;
    const calls = [...new Set(record.texts.flatMap((t) => parseCallsAnswer(t)))].slice(0, options.inputs);
    if (calls.length === 0) return;
    const [a] = await p.analyse([{ code: program.code, calls }]);
    for (const [k, call] of calls.entries()) {
      if (deps.signal?.aborted || limitReached()) return;
      const check = a!.calls![k]!;
      const c = candidateOf(spec, answer, program.code, call, check.function ?? program.function, a!, 2);
      if (p.decidedBefore(c)) continue;
      if (check.problem) {
        p.drop({ candidate: c.key, stage: 'calls', reason: check.problem, spec: spec.id, level: spec.level });
        continue;
      }
      // Scoped to the program: another spec's copies were decided in spec order already.
      const dup = p.dedup(c, 'program');
      if (dup) p.drop({ candidate: c.key, stage: 'dedup', reason: dup, spec: c.spec, level: c.level });
      else await p.process(c);
    }
  };

  const processSpec = async (spec: Spec, gateIndex: number): Promise<void> => {
    const candidates: Candidate[] = [];
    const programs = new Map<number, ProgramOf>();
    try {
      const record = await answersOf(spec);
      if (record?.error)
        p.drop({ candidate: answerKey(spec.id, -1), stage: 'model', reason: 'request_failed', detail: record.error, spec: spec.id, level: spec.level });
      const texts = record?.error ? [] : (record?.texts ?? []);
      const parsed = texts.map((text) => parseProgramAnswer(text));
      const readable = parsed.flatMap((a, i) => (a.ok ? [{ i, code: a.code, calls: a.calls }] : []));
      parsed.forEach((a, i) => {
        if (!a.ok) p.drop({ candidate: answerKey(spec.id, i), stage: 'parse', reason: a.reason, spec: spec.id, level: spec.level });
      });
      const analyses = await p.analyse(readable.map((r) => ({ code: r.code, calls: r.calls })));
      readable.forEach((r, j) => {
        const a = analyses[j]!;
        if (a.problem) {
          const detail = a.problem === 'forbidden_import' ? a.forbidden?.join(',') : a.message;
          p.drop({ candidate: answerKey(spec.id, r.i), stage: 'analyse', reason: a.problem, ...(detail ? { detail } : {}), spec: spec.id, level: spec.level });
          return;
        }
        r.calls.forEach((call, k) => {
          const key = callKey(spec.id, r.i, call);
          const check = a.calls![k]!;
          if (check.problem) {
            p.drop({ candidate: key, stage: 'calls', reason: check.problem, spec: spec.id, level: spec.level });
            return;
          }
          candidates.push(candidateOf(spec, r.i, r.code, call, check.function!, a, 1));
          if (!programs.has(r.i)) programs.set(r.i, { code: r.code, function: check.function!, calls: r.calls });
        });
      });
    } finally {
      if (gateIndex > 0) await gates[gateIndex - 1];
    }
    // Dedup in spec order (synchronous), then the rest in parallel with other specs.
    const todo: Candidate[] = [];
    for (const c of candidates) {
      if (p.decidedBefore(c)) continue;
      dedupLog?.append({ candidate: c.key, spec: c.spec, exact: exactKey(c.code, c.call), near: nearKey(c.astHash, c.call) });
      const dup = p.dedup(c);
      if (dup) p.drop({ candidate: c.key, stage: 'dedup', reason: dup, spec: c.spec, level: c.level });
      else todo.push(c);
    }
    opened[gateIndex]!();
    for (const c of candidates) {
      if (deps.signal?.aborted || limitReached()) return;
      if (todo.includes(c)) await p.process(c);
      // Resumed: a call stored before continues its mutation where it stopped.
      else if ((options.mutate ?? 0) > 0 && p.store.hasCandidate(c.key)) await p.mutateStored(c);
    }
    if ((options.inputs ?? 0) > 0) {
      for (const [answer, program] of programs) {
        if (deps.signal?.aborted || limitReached()) return;
        if (candidates.some((c) => c.program === answerKey(spec.id, answer) && p.store.hasCandidate(c.key))) await secondRound(spec, answer, program);
      }
    }
  };

  progress.stage('synthesize: programs → runs → samples', options.specs.length);
  let next = 0;
  let finished = 0;
  const worker = async () => {
    for (;;) {
      if (deps.signal?.aborted) return;
      if (limitReached() || now() > deadline) {
        if (next < options.specs.length) stoppedEarly = true;
        return;
      }
      const index = next++;
      const spec = options.specs[index];
      if (!spec) return;
      try {
        await processSpec(spec, index);
      } finally {
        opened[index]!(); // a spec that threw still lets the later ones through
      }
      finished += 1;
      progress.tick(finished, `kept ${p.store.size}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
  } finally {
    answerLog.close();
    dedupLog?.close();
    // Specs never started: their gates open, so nothing waits on them.
    for (const open of opened) open();
  }
  progress.done(`${finished} specs processed, store holds ${p.store.size}`);
  return { stoppedEarly, counters: p.counters };
}
