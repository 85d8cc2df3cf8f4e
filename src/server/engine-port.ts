// The engine as the server sees it: one small interface over the tracer, the
// question generator, the model client, the judge and the sample store, so the
// server's behaviour (caching, inline results, progress, cancellation, errors)
// is testable with a scripted engine and runs unchanged on the real one.
import type { AskPrompt } from '../engine/ask';
import type { LiveStop } from '../engine/live/stop';
import type { LiveAsk, LiveJudged, LiveTransition } from '../engine/live/transition';
import type { Reward } from '../engine/judge/schema';
import type { ChatMessage } from '../engine/model/prompt';
import type { Question } from '../engine/questions/schema';
import type { Entry, Limits, Trace } from '../engine/trace/schema';
import type { PythonTest, TestContext } from '../engine/simulate/test-functions';
import type { TestRun } from '../engine/simulate/test-predict';
import type { Answerer, ErrorCode, ExportParams, ExportResult, Health, QuestionVerdict, Rewards, Settings, ShownValue, Usage } from './protocol';

/** What a model call needs: the settings and the key (the key never leaves this object). */
export interface ModelAccess {
  settings: Settings;
  apiKey: string | undefined;
}

export interface TraceRequest {
  /** Absolute path of the file that holds the code. */
  file: string;
  /** The source as the editor holds it (it may be unsaved). */
  source: string;
  entry: Entry;
  cwd: string | undefined;
  env: Record<string, string> | undefined;
  /** Interpreter for this run; undefined: settings.pythonPath or PATH. */
  python: string | undefined;
  /** Per-run limits over the settings' limits. */
  limits: Limits | undefined;
  /** Record through debugpy over DAP (src/engine/dap/) instead of the in-process tracer. */
  via?: 'debugpy';
  settings: Settings;
}

/** What a prediction keeps for its judging later: the prompt asked and the parsed answer per question. */
export interface StepAsked {
  prompt: AskPrompt;
  answers: (string | null)[];
}

/** The model's answers to the Predict Result prompts, one per prompt. */
export interface TestAnswers {
  answers: (string | null)[];
  answerer: Answerer;
  usage: Usage;
  problems: string[];
}

/** What a whole-call verification keeps for the sample store. */
export interface VerificationSample {
  questions: Question[];
  format: AskPrompt['format'];
  template: string;
  messages: ChatMessage[];
  answerText: string;
  answerer: string;
  reward: Reward;
}

export interface StepPredictionResult {
  nextLine: number | null;
  values: Record<string, ShownValue>;
  answerer: Answerer;
  usage: Usage;
  problems: string[];
  /** The engine's own record of what was asked and answered, kept for judging later. */
  detail?: StepAsked;
}

export interface StepJudgement {
  actualNextLine: number;
  actualValues: Record<string, ShownValue>;
  questions: QuestionVerdict[];
}

export interface CallVerificationResult {
  template: string;
  questions: QuestionVerdict[];
  rewards: Rewards;
  answerer: Answerer;
  usage: Usage;
  problems: string[];
  /** What the sample store needs to write the record (questions, prompt, answers). */
  sample: VerificationSample;
}

/** What "Add to Dataset" hands the engine: a run, its verification, and where the store is. */
export interface SampleRequest {
  trace: Trace;
  file: string;
  entry: string;
  /** From a whole-call verification, when there was one. */
  verification: CallVerificationResult | undefined;
  settings: Settings;
  storeDir: string;
  /** The workspace folder: provenance paths are relative to it. */
  root: string | undefined;
}

/** A live session's ask (src/engine/live): the engine's record, kept for its transition, and the prediction as shown. */
export interface LiveAsked {
  ask: LiveAsk;
  result: StepPredictionResult;
}

/** "Add to dataset" of a judged live step: where the store is and what the provenance names. */
export interface LiveSampleRequest {
  judged: LiveJudged;
  storeDir: string;
  /** The workspace folder's name. */
  project: string;
  /** The file, relative to the workspace folder. */
  file: string;
}

export interface Engine {
  trace(request: TraceRequest, signal: AbortSignal): Promise<Trace>;
  /** The next-line and state questions at `step`, answered by the model (or the baseline). */
  predictStep(trace: Trace, step: number, access: ModelAccess, signal: AbortSignal): Promise<StepPredictionResult>;
  judgeStep(trace: Trace, step: number, prediction: StepPredictionResult, access: ModelAccess, signal: AbortSignal): Promise<StepJudgement>;
  verifyCall(trace: Trace, access: ModelAccess, signal: AbortSignal): Promise<CallVerificationResult>;
  addSample(input: SampleRequest): Promise<{ id: string; added: boolean }>;
  exportSamples(storeDir: string, params: ExportParams, settings: Settings): Promise<ExportResult>;
  health(access: ModelAccess, signal: AbortSignal): Promise<Health>;
  /** Predict Result: the test prompts (engine/simulate/test-predict) answered by the model (or the baseline). */
  askTest(prompts: AskPrompt[], access: ModelAccess, signal: AbortSignal): Promise<TestAnswers>;
  /** Predict Result: each answer judged against the test's real run (null: no truth). */
  judgeTest(
    test: PythonTest,
    context: TestContext,
    answers: (string | null)[],
    run: TestRun,
    access: ModelAccess,
    signal: AbortSignal,
  ): Promise<(boolean | null)[]>;
  /** Predict next step at a stop of the user's own debug session: the next-step questions of the live policy, answered. */
  askLive(stop: LiveStop, access: ModelAccess, signal: AbortSignal): Promise<LiveAsked>;
  /** The session stopped again after an ask: 'wait', or the transition judged by the one judge. */
  judgeLive(transition: LiveTransition, stop: LiveStop, reason: string, access: ModelAccess, signal: AbortSignal): Promise<LiveJudged | 'wait'>;
  /** "Add to dataset" of a judged live step (liveSample: provenance truth "live-transition"). */
  addLiveSample(input: LiveSampleRequest): Promise<{ id: string; added: boolean }>;
  close(): Promise<void>;
}

/** An engine failure the user can act on: `message` says what happened and what to do next. */
export class EngineError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}
