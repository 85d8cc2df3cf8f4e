// The server's memory: traced runs, step predictions with their verdicts,
// whole-call verifications, and the entries the user typed per function.
// Bounded, so a long editing session cannot grow the server without limit.
import { describeOutcome } from '../engine/trace/outcome';
import type { Trace } from '../engine/trace/schema';
import type { CallVerificationResult, StepPredictionResult } from './engine-port';
import type { DebuggerStop, Prediction, RunSummary, StepVerdict, Verification } from './protocol';

export interface Run {
  id: string;
  uri: string;
  /** Absolute path of the traced file. */
  file: string;
  entry: string;
  trace: Trace;
}

export interface PredictionRecord {
  prediction: Prediction;
  result: StepPredictionResult;
  verdict: StepVerdict | undefined;
}

export interface VerificationRecord {
  verification: Verification;
  result: CallVerificationResult;
}

export class RunStore {
  private readonly runs = new Map<string, Run>();
  private readonly predictions = new Map<string, PredictionRecord>();
  private readonly verifications = new Map<string, VerificationRecord>();
  private readonly history = new Map<string, string[]>();
  private counter = 0;
  /** Where the replay debugger stands, as the client last told us. */
  stop: DebuggerStop | null = null;

  constructor(private readonly maxRuns = 20) {}

  newId(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${this.counter}`;
  }

  addRun(run: Omit<Run, 'id'>): Run {
    const full: Run = { ...run, id: this.newId('run') };
    this.runs.set(full.id, full);
    while (this.runs.size > this.maxRuns) {
      const oldest = this.runs.keys().next().value as string;
      this.dropRun(oldest);
    }
    return full;
  }

  /** A run traced by someone else (the replay debugger), registered under its own id. */
  adoptRun(id: string, run: Omit<Run, 'id'>): Run {
    const full: Run = { ...run, id };
    this.runs.delete(id);
    this.runs.set(id, full);
    return full;
  }

  run(id: string): Run | undefined {
    return this.runs.get(id);
  }

  allRuns(): Run[] {
    return [...this.runs.values()];
  }

  private dropRun(id: string): void {
    this.runs.delete(id);
    for (const [pid, p] of this.predictions) if (p.prediction.runId === id) this.predictions.delete(pid);
    for (const [vid, v] of this.verifications) if (v.verification.runId === id) this.verifications.delete(vid);
  }

  addPrediction(record: PredictionRecord): void {
    this.predictions.set(record.prediction.id, record);
  }

  prediction(id: string): PredictionRecord | undefined {
    return this.predictions.get(id);
  }

  predictionsFor(runId: string): PredictionRecord[] {
    return [...this.predictions.values()].filter((p) => p.prediction.runId === runId);
  }

  /** The newest prediction shown in a document: only one is drawn at a time. */
  latestPrediction(uri: string): PredictionRecord | undefined {
    let last: PredictionRecord | undefined;
    for (const p of this.predictions.values()) if (p.prediction.uri === uri) last = p;
    return last;
  }

  addVerification(record: VerificationRecord): void {
    this.verifications.set(record.verification.id, record);
  }

  verification(id: string): VerificationRecord | undefined {
    return this.verifications.get(id);
  }

  latestVerification(filter: (v: Verification) => boolean): VerificationRecord | undefined {
    let last: VerificationRecord | undefined;
    for (const v of this.verifications.values()) if (filter(v.verification)) last = v;
    return last;
  }

  /** Remembers an entry the user ran for a function (most recent first, no repeats). */
  remember(uri: string, fn: string, entry: string): void {
    const key = `${uri}#${fn}`;
    const list = (this.history.get(key) ?? []).filter((e) => e !== entry);
    list.unshift(entry);
    this.history.set(key, list.slice(0, 20));
  }

  entries(uri: string, fn: string): string[] {
    return this.history.get(`${uri}#${fn}`) ?? [];
  }
}

export function summarize(run: Run): RunSummary {
  return {
    runId: run.id,
    uri: run.uri,
    entry: run.entry,
    steps: run.trace.steps.length,
    outcome: describeOutcome(run.trace),
    outcomeKind: run.trace.outcome.kind,
    pythonVersion: run.trace.python?.version ?? 'n/a (C)',
  };
}

/** The function name a call entry calls: `f` for `f([1], 2)`, `mod.f` → `f`. */
export function calledFunction(entry: string): string | undefined {
  const m = /^\s*(?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Za-z_][A-Za-z0-9_]*)\s*\(/.exec(entry);
  return m?.[1];
}
