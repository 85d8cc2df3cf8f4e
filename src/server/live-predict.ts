// "Predict next step" in the user's own debug session, in the server
// (docs/live-debugging.md): the stop is read through the session
// (readLiveStop over LiveSessions' DAP proxy), asked through the one ask road
// (Engine.askLive), and kept as a LiveTransition, which every later resume and
// stop of the session advances, in the order they came — also those that came
// while the model was still answering — until the asked line's verdict is
// known. Predictions, verdicts and their runs live in the one RunStore, so a
// live step is drawn inline and in the panel exactly as a replay step.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { liveAdapter, readLiveStop, type LiveStop } from '../engine/live/stop';
import { LiveTransition, type LiveAsk, type LiveJudged } from '../engine/live/transition';
import { pythonTracerDir } from '../engine/python';
import type { Question } from '../engine/questions';
import { unknownVerdict, verdictOf } from './asking';
import { EngineError, type Engine, type ModelAccess } from './engine-port';
import type { LiveSessions, LiveSessionState } from './live-sessions';
import type { LiveResumed, Prediction, QuestionVerdict, ShownValue, StepVerdict } from './protocol';
import type { PredictionRecord, RunStore } from './runs';
import type { Log } from '../engine/log';

/** The step of a live run's trace that was asked about (the one-stop trace: call, then this line). */
const ASKED_STEP = 1;
/** Judging at a stop is not cancelled from outside (the judge has its own bounds). */
const NEVER = new AbortController().signal;

type Seen = { kind: 'resumed'; how: LiveResumed['how'] } | { kind: 'stopped'; stop: LiveStop; reason: string } | { kind: 'unreadable'; why: string };

/** A prediction waiting for its verdict. */
interface Watch {
  transition: LiveTransition;
  record: PredictionRecord;
}

/** A live run: the ask behind it and, once the session stepped, its judged transition (or why it has none). */
interface LiveRun {
  ask: LiveAsk;
  judged: LiveJudged | undefined;
  unjudged?: string;
}

export interface LivePredictDeps {
  engine: Engine;
  store: RunStore;
  sessions: LiveSessions;
  /** The key and settings, or the untrusted refusal (the server's one road to them). */
  access(action: string): ModelAccess;
  /** Inline results of `uri` (and the panel of `runId`) changed. */
  publish(uri: string, runId: string): void;
  /** A problem the user should see. */
  warn(message: string): void;
  log: Log;
  tracerDir?: string;
}

export class LivePredict {
  /** Sessions whose ask is being answered: what they did meanwhile, in order. */
  private readonly asking = new Map<string, Seen[]>();
  private readonly watching = new Map<string, Watch>();
  private readonly runs = new Map<string, LiveRun>();
  private readonly tracerDir: string;

  constructor(private readonly deps: LivePredictDeps) {
    this.tracerDir = deps.tracerDir ?? pythonTracerDir();
    deps.sessions.extend({
      stopped: (s) => this.stopped(s),
      resumed: async (s, how) => this.seen(s, { kind: 'resumed', how }),
      missed: async (s) => this.seen(s, { kind: 'unreadable', why: 'the session stepped on before that stop could be read' }),
      ended: async (s) => this.ended(s),
    });
  }

  isLive(runId: string): boolean {
    return this.runs.has(runId);
  }

  /** Predict next step at the stop of `sessionId`; the verdict follows when the session steps. */
  async predict(sessionId: string, signal: AbortSignal, report: (message: string) => void): Promise<Prediction> {
    const access = this.deps.access('predict the next step');
    const { sessions } = this.deps;
    if (this.asking.has(sessionId)) throw new EngineError('bad_params', 'A prediction at this stop is still being answered: wait for it.');
    // Read in the session's queue: after every step it was told of, before any it is told of next.
    const { session, stop } = await sessions.enqueue(sessionId, async () => {
      const s = sessions.get(sessionId);
      if (this.asking.has(sessionId)) throw new EngineError('bad_params', 'A prediction at this stop is still being answered: wait for it.');
      if (!s?.stopped) throw new EngineError('bad_params', 'The debug session is not stopped: predict when it stops at a line (a breakpoint, a step).');
      report('reading the stop');
      const read = await this.read(s, s.stopped.threadId);
      this.asking.set(sessionId, []);
      return { session: s, stop: read };
    });
    let asked;
    try {
      report('asking the model');
      asked = await this.deps.engine.askLive(stop, access, signal);
    } catch (e) {
      this.asking.delete(sessionId);
      throw e;
    }
    // Take over in the queue, then catch up with what the session did while the model answered.
    return sessions.enqueue(sessionId, async () => {
      const seen = this.asking.get(sessionId) ?? [];
      this.asking.delete(sessionId);
      if (session.ended) throw new EngineError('bad_params', 'The debug session ended while the model was answering: there is nothing to show.');
      const prediction = this.show(stop, asked.ask, asked.result, session);
      const watch: Watch = { transition: new LiveTransition(asked.ask), record: this.deps.store.prediction(prediction.id)! };
      this.watching.set(sessionId, watch);
      for (const event of seen) if (!(await this.advance(sessionId, watch, event))) break;
      return prediction;
    });
  }

  /** "Add to dataset" of a live run: its judged transition as a sample (liveSample). */
  async addSample(runId: string, storeDir: string, root: string | undefined): Promise<{ id: string; added: boolean }> {
    const live = this.runs.get(runId);
    const run = this.deps.store.run(runId);
    if (!live || !run) throw new EngineError('unknown_run', `No live step ${runId}; predict at a stop first.`);
    if (live.unjudged) throw new EngineError('bad_params', `Not added: this live step has no verdict (${live.unjudged}).`);
    if (!live.judged)
      throw new EngineError('bad_params', 'This live step is not judged yet: step over the line (F10) so its verdict is known, then add it to the dataset.');
    const rel = root && !path.relative(root, run.file).startsWith('..') ? path.relative(root, run.file) : path.basename(run.file);
    return this.deps.engine.addLiveSample({
      judged: live.judged,
      storeDir,
      project: root ? path.basename(root) : 'workspace',
      file: rel.split(path.sep).join('/'),
    });
  }

  /** The stop as the engine needs it; a failure says what went wrong in the session. */
  private async read(s: LiveSessionState, threadId: number): Promise<LiveStop> {
    let stop: LiveStop;
    try {
      // The session's debug type picks the reader: debugpy exactly, lldb typed (C), any other as shown.
      stop = await readLiveStop(this.deps.sessions.dap(s.id), threadId, { tracerDir: this.tracerDir, adapter: liveAdapter(s.debugType) });
    } catch (e) {
      throw new EngineError('bad_params', `The debug session's stop could not be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    s.at = { uri: pathToFileURL(stop.path).href, line: stop.line };
    return stop;
  }

  /** A live ask's prediction, stored as a run of its own (the one-stop trace) so the inline view and the panel draw it. */
  private show(stop: LiveStop, ask: LiveAsk, result: PredictionRecord['result'], session: LiveSessionState): Prediction {
    const { store } = this.deps;
    const uri = pathToFileURL(stop.path).href;
    const run = store.addRun({ uri, file: stop.path, entry: `${stop.fn} at line ${stop.line} (${session.debugType} session)`, trace: ask.trace });
    this.runs.set(run.id, { ask, judged: undefined });
    // The store keeps a bounded number of runs; what it evicted is forgotten here too.
    for (const id of this.runs.keys()) if (!store.run(id)) this.runs.delete(id);
    const prediction: Prediction = {
      id: store.newId('pred'),
      runId: run.id,
      uri,
      step: ASKED_STEP,
      line: stop.line,
      nextLine: result.nextLine,
      values: result.values,
      answerer: result.answerer,
      usage: result.usage,
      problems: result.problems,
    };
    store.addPrediction({ prediction, result, verdict: undefined });
    this.deps.publish(uri, run.id);
    return prediction;
  }

  private async stopped(s: LiveSessionState): Promise<void> {
    if (!this.asking.has(s.id) && !this.watching.has(s.id)) return;
    const threadId = s.stopped?.threadId;
    const reason = s.stopped?.reason ?? 'step';
    if (threadId === undefined) return;
    let event: Seen;
    try {
      event = { kind: 'stopped', stop: await this.read(s, threadId), reason };
    } catch (e) {
      event = { kind: 'unreadable', why: e instanceof Error ? e.message : String(e) };
    }
    await this.seen(s, event);
  }

  private async seen(s: LiveSessionState, event: Seen): Promise<void> {
    const queued = this.asking.get(s.id);
    if (queued) return void queued.push(event);
    const watch = this.watching.get(s.id);
    if (watch) await this.advance(s.id, watch, event);
  }

  /** Feeds one event to the transition; false once the watch is over (judged, or given up). */
  private async advance(sessionId: string, watch: Watch, event: Seen): Promise<boolean> {
    if (event.kind === 'resumed') {
      watch.transition.resumed(event.how);
      return true;
    }
    if (event.kind === 'unreadable') {
      this.deps.warn(`The live step at line ${watch.record.prediction.line} cannot be judged: ${event.why}`);
      this.conclude(sessionId, watch, undefined, `the stop after it could not be read (${event.why})`);
      return false;
    }
    let judged: LiveJudged | 'wait';
    try {
      judged = await this.deps.engine.judgeLive(watch.transition, event.stop, event.reason, this.deps.access('judge the prediction'), NEVER);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.deps.warn(`The live step at line ${watch.record.prediction.line} could not be judged: ${why}`);
      this.conclude(sessionId, watch, undefined, `the judge failed (${why})`);
      return false;
    }
    if (judged === 'wait') return true;
    this.conclude(sessionId, watch, judged, undefined);
    return false;
  }

  private async ended(s: LiveSessionState): Promise<void> {
    const watch = this.watching.get(s.id);
    if (watch) this.conclude(s.id, watch, undefined, 'the debug session ended before the line finished');
    // An ask still being answered finds the session ended when it takes over.
  }

  /** Ends the watch: the verdict from the judged transition, or every question unknown (`why`). */
  private conclude(sessionId: string, watch: Watch, judged: LiveJudged | undefined, why: string | undefined): void {
    if (this.watching.get(sessionId) === watch) this.watching.delete(sessionId);
    const { prediction } = watch.record;
    const live = this.runs.get(prediction.runId);
    if (!live) return;
    const run = this.deps.store.run(prediction.runId);
    if (!judged) live.unjudged = why;
    if (judged) {
      live.judged = judged;
      if (run) this.deps.store.adoptRun(run.id, { uri: run.uri, file: run.file, entry: run.entry, trace: judged.trace });
    }
    watch.record.verdict = stepVerdict(prediction, live.ask, judged, why ?? 'not read');
    this.deps.publish(prediction.uri, prediction.runId);
  }
}

/** A live transition's verdict as the editor draws it: ✓/✗ where the truth was read exactly, unknown where it was not. */
export function stepVerdict(prediction: Prediction, ask: LiveAsk, judged: LiveJudged | undefined, why: string): StepVerdict {
  const asked = ask.prepared.questions;
  const answers = ask.answered[0]?.samples[0]?.parsed.answers ?? [];
  const results = judged?.results[0]?.[0];
  const actualValues = Object.create(null) as Record<string, ShownValue>;
  const questions: QuestionVerdict[] = asked.map((q, i) => {
    const truth: Question | undefined = judged?.questions[i];
    const r = results?.[i];
    if (truth && r && r.status !== 'unknown') {
      if (truth.kind === 'state')
        actualValues[truth.var] = 'nil' in truth.truth ? { value: 'Nil', type: 'Nil' } : { value: truth.truth.repr, type: truth.truth.type };
      return verdictOf(truth, answers[i], r.verdict);
    }
    return unknownVerdict(q, answers[i], r?.status === 'unknown' ? r.why : why);
  });
  const known = questions.filter((q) => q.unknown === undefined);
  return {
    predictionId: prediction.id,
    runId: prediction.runId,
    step: prediction.step,
    line: prediction.line,
    actualNextLine: judged?.next ?? 0,
    actualValues,
    questions,
    // Right when every question that could be judged is right; unknown ones neither help nor hurt.
    ok: known.length > 0 && known.every((q) => q.ok),
  };
}
