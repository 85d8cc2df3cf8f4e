// The editor ↔ engine-server protocol: custom LSP requests and notifications,
// one zod schema per message, shared by the server, the VS Code extension and
// any other LSP client (see docs/editor.md). No vscode import here.
import { z } from 'zod';
import { ExportFormatSchema } from '../engine/dataset/formats';
import { LimitsSchema, type Trace } from '../engine/trace/schema';

export { EXPORT_FORMAT_DESCRIPTIONS, ExportFormatSchema, type ExportFormat } from '../engine/dataset/formats';

// ---------------------------------------------------------------- settings

/** `execverify.*` settings as the server needs them; every field has a default. */
export const SettingsSchema = z.object({
  /** OpenAI-compatible base URL (…/v1). Empty: no endpoint, the baseline answers. */
  baseUrl: z.string().default(''),
  model: z.string().default(''),
  apiMode: z.enum(['chat', 'completions']).default('chat'),
  /** Prompt template for "Verify whole call". */
  template: z.string().default('execverify'),
  alpha: z.number().min(0).max(1).default(0.5),
  gating: z.boolean().default(true),
  requestTimeoutMs: z.number().int().positive().default(60_000),
  limits: z
    .object({
      steps: z.number().int().positive().default(100_000),
      wallTimeMs: z.number().int().positive().default(10_000),
      memoryMb: z.number().int().positive().default(512),
    })
    .default({}),
  /** Python interpreter; empty: found on PATH (python3, python). */
  pythonPath: z.string().default(''),
  /** Sample store, relative to the first workspace folder. */
  datasetDir: z.string().default('.execverify'),
  /** When a prediction's verdict appears: when the debugger reaches the next step, or at once. */
  reveal: z.enum(['onStep', 'immediately']).default('onStep'),
});
export type Settings = z.infer<typeof SettingsSchema>;

/** Parses settings leniently: a bad field falls back to its default instead of failing the whole object. */
export function parseSettings(raw: unknown): Settings {
  const full = SettingsSchema.safeParse(raw ?? {});
  if (full.success) return full.data;
  const input = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    const one = SettingsSchema.safeParse({ [key]: value });
    if (one.success) kept[key] = value;
  }
  return SettingsSchema.parse(kept);
}

/**
 * `initialize` → initializationOptions. The API key is NOT here: it reaches the
 * server in its environment (EXECVERIFY_API_KEY) at start, so no protocol
 * message (which an LSP trace may log) ever carries it.
 */
export const InitOptionsSchema = z.object({
  settings: z.unknown().optional(),
  /** How inline results reach the client: custom notifications (VS Code decorations) or standard inlay hints. */
  inline: z.enum(['notifications', 'inlayHints']).default('inlayHints'),
  /** Workspace folder used for the sample store when the client sends no workspaceFolders. */
  workspaceRoot: z.string().optional(),
  /** False in an untrusted workspace: the server then refuses everything that runs code, judges or asks a model. */
  trusted: z.boolean().default(true),
});
export type InitOptions = z.infer<typeof InitOptionsSchema>;

// ---------------------------------------------------------------- shared shapes

export const ShownValueSchema = z.object({ value: z.string(), type: z.string() });
export type ShownValue = z.infer<typeof ShownValueSchema>;

/**
 * Variable name → value, for names from a program: `__proto__`, `constructor`
 * or `toString` are names like any other. zod's record silently drops a
 * `__proto__` key, so this one checks each own key and returns a
 * null-prototype object (an absent name reads undefined, never Object's).
 */
export function namesRecord<T extends z.ZodTypeAny>(value: T): z.ZodType<Record<string, z.output<T>>> {
  // Typed by what it accepts and returns (a name → value object), so callers infer one type, not `unknown` in.
  const schema = z.unknown().transform((raw, ctx): Record<string, z.output<T>> => {
    const out = Object.create(null) as Record<string, z.output<T>>;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      ctx.addIssue({ code: 'custom', message: 'expected an object of names' });
      return z.NEVER;
    }
    for (const name of Object.keys(raw)) {
      const parsed = value.safeParse((raw as Record<string, unknown>)[name]);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', path: [name], message: parsed.error.issues[0]?.message ?? 'invalid' });
        return z.NEVER;
      }
      out[name] = parsed.data as z.output<T>;
    }
    return out;
  });
  return schema as unknown as z.ZodType<Record<string, z.output<T>>>;
}

/** Who answered: a real model, or the trivial baseline (always labelled as such). */
export const AnswererSchema = z.object({
  kind: z.enum(['model', 'baseline']),
  name: z.string(),
  /** Why the baseline answered instead of a model, when it did. */
  note: z.string().optional(),
});
export type Answerer = z.infer<typeof AnswererSchema>;

export const UsageSchema = z.object({
  latencyMs: z.number().nonnegative(),
  promptTokens: z.number().int().nonnegative().optional(),
  completionTokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

export const RewardsSchema = z.object({
  rIO: z.number(),
  rWhite: z.number(),
  r: z.number(),
  alpha: z.number(),
  gated: z.boolean(),
});
export type Rewards = z.infer<typeof RewardsSchema>;

/** A summary of one traced run (the full Trace stays in the server). */
export const RunSummarySchema = z.object({
  runId: z.string(),
  uri: z.string(),
  entry: z.string(),
  steps: z.number().int().nonnegative(),
  outcome: z.string(),
  outcomeKind: z.string(),
  pythonVersion: z.string(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

// ---------------------------------------------------------------- requests

export const TraceParamsSchema = z.object({
  uri: z.string(),
  /** A call expression evaluated in the file's namespace, e.g. `f([1, 2], 3)`. Absent: the file runs as a script. */
  entry: z.string().min(1).optional(),
  /** sys.argv[1:] when the file runs as a script. */
  args: z.array(z.string()).optional(),
  cwd: z.string().optional(),
  env: z.record(z.string()).optional(),
  /** Interpreter for this run (else execverify.pythonPath, else found on PATH). */
  python: z.string().optional(),
  /** Per-run limits on top of execverify.limits (the replay debugger's launch configuration). */
  limits: LimitsSchema.optional(),
  /** Also return the recorded trace (the replay debugger replays it). */
  wantTrace: z.boolean().optional(),
  /** Record through debugpy over DAP instead of the in-process tracer (a launch configuration's `via`). */
  via: z.enum(['debugpy']).optional(),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type TraceParams = z.infer<typeof TraceParamsSchema>;
export const TraceResultSchema = RunSummarySchema.extend({
  /**
   * With `wantTrace`: the run's trace. The server checked it (parseTrace) when
   * the tracer produced it; the editor takes it as it is, with a shape check
   * only, instead of validating a million steps a second time.
   */
  trace: z.custom<Trace>((t) => typeof t === 'object' && t !== null && Array.isArray((t as { steps?: unknown }).steps), 'a recorded trace').optional(),
});
export type TraceResult = z.infer<typeof TraceResultSchema>;

/** Registers a trace recorded elsewhere (a replay session's traceFile) so predictions can refer to it. */
export const AdoptParamsSchema = z.object({ uri: z.string(), trace: z.unknown() });
export type AdoptParams = z.infer<typeof AdoptParamsSchema>;

export const PredictParamsSchema = z.object({
  runId: z.string(),
  /** The step the debugger stopped at (index into the trace). */
  step: z.number().int().nonnegative(),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type PredictParams = z.infer<typeof PredictParamsSchema>;

export const PredictionSchema = z.object({
  id: z.string(),
  runId: z.string(),
  uri: z.string(),
  step: z.number().int(),
  line: z.number().int(),
  /** Predicted next line (1-based); -1: the function returns or raises; null: no usable answer. */
  nextLine: z.number().int().nullable(),
  values: namesRecord(ShownValueSchema),
  answerer: AnswererSchema,
  usage: UsageSchema,
  /** Problems with the model's answer (garbage, missing fields), shown to the user. */
  problems: z.array(z.string()),
});
export type Prediction = z.infer<typeof PredictionSchema>;

export const QuestionVerdictSchema = z.object({
  kind: z.string(),
  /** 1-based line the question is about (-1 / 0 for the output question). */
  line: z.number().int(),
  /** Short text: "next line after 4", "x after 4", "output". */
  label: z.string(),
  /** State questions: the variable asked about. */
  var: z.string().optional(),
  predicted: z.string(),
  actual: z.string(),
  ok: z.boolean(),
  /** A live step's question whose truth could not be read exactly: why. It is shown as unknown, never ✓/✗ (`ok` is false). */
  unknown: z.string().optional(),
});
export type QuestionVerdict = z.infer<typeof QuestionVerdictSchema>;

export const StepVerdictSchema = z.object({
  predictionId: z.string(),
  runId: z.string(),
  step: z.number().int(),
  line: z.number().int(),
  actualNextLine: z.number().int(),
  actualValues: namesRecord(ShownValueSchema),
  questions: z.array(QuestionVerdictSchema),
  ok: z.boolean(),
});
export type StepVerdict = z.infer<typeof StepVerdictSchema>;

export const RevealParamsSchema = z.object({ predictionId: z.string() });
export type RevealParams = z.infer<typeof RevealParamsSchema>;

export const VerifyParamsSchema = z.object({
  runId: z.string(),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type VerifyParams = z.infer<typeof VerifyParamsSchema>;

export const VerificationSchema = z.object({
  id: z.string(),
  runId: z.string(),
  uri: z.string(),
  template: z.string(),
  questions: z.array(QuestionVerdictSchema),
  rewards: RewardsSchema,
  answerer: AnswererSchema,
  usage: UsageSchema,
  problems: z.array(z.string()),
});
export type Verification = z.infer<typeof VerificationSchema>;

export const AddSampleParamsSchema = z.object({
  /** A verification (whole call) or a run (questions only, no model answers). */
  verificationId: z.string().optional(),
  runId: z.string().optional(),
});
export type AddSampleParams = z.infer<typeof AddSampleParamsSchema>;
export const AddSampleResultSchema = z.object({ id: z.string(), added: z.boolean(), store: z.string() });
export type AddSampleResult = z.infer<typeof AddSampleResultSchema>;

export const ExportParamsSchema = z.object({ format: ExportFormatSchema, out: z.string() });
export type ExportParams = z.infer<typeof ExportParamsSchema>;
export const ExportResultSchema = z.object({ out: z.string(), records: z.number().int().nonnegative(), files: z.array(z.string()) });
export type ExportResult = z.infer<typeof ExportResultSchema>;

export const InputsParamsSchema = z.object({ uri: z.string(), function: z.string() });
export type InputsParams = z.infer<typeof InputsParamsSchema>;
export const InputCandidateSchema = z.object({
  entry: z.string(),
  source: z.enum(['history', 'test', 'lastRun']),
  /** Where it came from: "tests/test_x.py:12" for a test. */
  detail: z.string(),
});
export type InputCandidate = z.infer<typeof InputCandidateSchema>;
export const InputsResultSchema = z.array(InputCandidateSchema);

/** Predict Result: a test of the file, found by name and line (the CodeLens sends both). */
export const PredictTestParamsSchema = z.object({
  uri: z.string(),
  name: z.string().min(1),
  /** 1-based line of the test's `def`. */
  line: z.number().int().positive(),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type PredictTestParams = z.infer<typeof PredictTestParamsSchema>;

/** One asked expression of a test prediction: `passes(test_add)` or the tested call `add(2, 3)`. */
export const TestAnswerSchema = z.object({
  asked: z.string(),
  /** The model's literal; "(no answer)" when it gave none. */
  predicted: z.string(),
  /** The real run's value; null before the run, or when the run does not record it. */
  actual: z.string().nullable(),
  /** The judge's verdict; null when there is no truth to judge against. */
  ok: z.boolean().nullable(),
});
export type TestAnswer = z.infer<typeof TestAnswerSchema>;

export const TestPredictionSchema = z.object({
  id: z.string(),
  uri: z.string(),
  test: z.string(),
  line: z.number().int(),
  /** How the tracer ran the test, e.g. `test_add()` or `Calc("test_add").debug()`. */
  entry: z.string(),
  answers: z.array(TestAnswerSchema),
  /** The real result; null until the test has run. */
  real: z.object({ status: z.enum(['passed', 'failed', 'error']), detail: z.string() }).nullable(),
  /** The recorded run (replay debugger, panel); null until the test has run. */
  runId: z.string().nullable(),
  answerer: AnswererSchema,
  usage: UsageSchema,
  problems: z.array(z.string()),
});
export type TestPrediction = z.infer<typeof TestPredictionSchema>;

export const HealthSchema = z.object({
  /** untrusted: Restricted Mode, the endpoint was not contacted. */
  state: z.enum(['baseline', 'ok', 'down', 'untrusted']),
  endpoint: z.string(),
  model: z.string(),
  message: z.string(),
});
export type Health = z.infer<typeof HealthSchema>;

/** Everything the trace-vs-prediction panel shows for one run. */
export const PanelRowSchema = z.object({
  step: z.number().int(),
  event: z.string(),
  fn: z.string(),
  depth: z.number().int(),
  line: z.number().int(),
  text: z.string(),
  /** Locals that changed at this step, as `name = repr`. */
  changes: z.array(z.string()),
  /** The line that runs next in the same frame (-1: returns / raises), when known. */
  nextLine: z.number().int().nullable(),
  prediction: z
    .object({
      nextLine: z.number().int().nullable(),
      values: namesRecord(ShownValueSchema),
      answerer: z.string(),
      latencyMs: z.number(),
    })
    .optional(),
  verdict: z
    .object({
      ok: z.boolean(),
      questions: z.array(QuestionVerdictSchema),
      actualValues: namesRecord(ShownValueSchema),
    })
    .optional(),
});
export type PanelRow = z.infer<typeof PanelRowSchema>;

export const PanelDataSchema = z.object({
  run: RunSummarySchema,
  rows: z.array(PanelRowSchema),
  /** Steps left out at the end of a huge run (the panel shows the first rows only). */
  omittedRows: z.number().int().nonnegative(),
  verification: VerificationSchema.nullable(),
});
export type PanelData = z.infer<typeof PanelDataSchema>;

/**
 * A row check that stays fast on 10,000-row runs: plain rows are checked field
 * by field, rows with a prediction or verdict (few) by the full PanelRowSchema.
 */
export function isPanelRow(value: unknown): value is PanelRow {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  const plain =
    typeof r.step === 'number' &&
    typeof r.event === 'string' &&
    typeof r.fn === 'string' &&
    typeof r.depth === 'number' &&
    typeof r.line === 'number' &&
    typeof r.text === 'string' &&
    Array.isArray(r.changes) &&
    r.changes.every((c) => typeof c === 'string') &&
    (r.nextLine === null || typeof r.nextLine === 'number');
  if (!plain) return false;
  return (r.prediction === undefined && r.verdict === undefined) || PanelRowSchema.safeParse(value).success;
}

/** PanelData as it crosses the wire: the same shape as PanelDataSchema, with the fast row check. */
export const PanelDataWireSchema = PanelDataSchema.extend({
  rows: z.custom<PanelRow[]>((rows) => Array.isArray(rows) && rows.every(isPanelRow), 'a panel row does not have the PanelRow shape'),
});
export const PanelParamsSchema = z.object({ runId: z.string() });

// ---------------------------------------------------------------- notifications

/** Where the replay debugger stands: a step of a run, where it is in the source. */
export const DebuggerStopSchema = z.object({
  runId: z.string().nullable(),
  step: z.number().int().nonnegative(),
  uri: z.string().optional(),
  /** 1-based line of the step. */
  line: z.number().int().optional(),
});
export type DebuggerStop = z.infer<typeof DebuggerStopSchema>;

/** Client → server: the replay debugger moved (from its `execverify/step` event). */
export const StepChangedSchema = DebuggerStopSchema.extend({
  /** The session ended: lenses for it disappear. */
  ended: z.boolean().optional(),
});
export type StepChanged = z.infer<typeof StepChangedSchema>;

export const SetTrustSchema = z.object({ trusted: z.boolean() });

/** One inline result; the client draws it beside `line` (1-based). */
export const InlineItemSchema = z.object({
  line: z.number().int().positive(),
  kind: z.enum(['predictedNext', 'predictedValue', 'verdict', 'question']),
  text: z.string(),
  /** Verdicts: right or wrong. Predictions: absent. */
  ok: z.boolean().optional(),
  hover: z.string().optional(),
});
export type InlineItem = z.infer<typeof InlineItemSchema>;

/** Server → client: the full set of inline results for a document (replaces the previous set). */
export const InlineResultsSchema = z.object({ uri: z.string(), items: z.array(InlineItemSchema) });
export type InlineResults = z.infer<typeof InlineResultsSchema>;

/** Server → client: a run's predictions, verdicts or verification changed (the panel reloads it). */
export const RunChangedSchema = z.object({ runId: z.string() });

/** Server → client: a problem to show to the user with what to do next. */
export const NoticeSchema = z.object({
  severity: z.enum(['info', 'warning', 'error']),
  message: z.string(),
  /** A command id the client can offer as the fix, e.g. "execverify.setApiKey". */
  action: z.string().optional(),
});
export type Notice = z.infer<typeof NoticeSchema>;

// ---------------------------------------------------------------- live debug sessions
// Somebody else's debug session (debugpy, lldb, any adapter), followed by the
// extension's DebugAdapterTracker. The engine logic runs in the server; it
// reaches the session through `execverify/dap`, which the client answers with
// the session's `customRequest`, and hears of its steps by the notifications.

/** How a followed session was resumed (the engine's Resume). */
export const LiveResumeSchema = z.enum(['next', 'stepIn', 'stepOut', 'continue', 'other']);

/** Server → client request: one DAP request to the followed session `sessionId`; the answer is the response's body. */
export const LiveDapParamsSchema = z.object({ sessionId: z.string().min(1), command: z.string().min(1), args: z.unknown().optional() });
export type LiveDapParams = z.infer<typeof LiveDapParamsSchema>;

/** Client → server: a followed session stopped on a thread (`debugType`: the session's type, e.g. debugpy, lldb). */
export const LiveStoppedSchema = z.object({ sessionId: z.string().min(1), threadId: z.number().int(), reason: z.string(), debugType: z.string() });
export type LiveStopped = z.infer<typeof LiveStoppedSchema>;

/** Client → server: the editor resumed a followed session (step, continue, …). */
export const LiveResumedSchema = z.object({ sessionId: z.string().min(1), how: LiveResumeSchema });
export type LiveResumed = z.infer<typeof LiveResumedSchema>;

/** Client → server: a followed session ended. */
export const LiveEndedSchema = z.object({ sessionId: z.string().min(1) });
export type LiveEnded = z.infer<typeof LiveEndedSchema>;

/** "Predict next step" in a followed live session, at the thread it is stopped on; answered by a Prediction. */
export const PredictLiveParamsSchema = z.object({
  sessionId: z.string().min(1),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type PredictLiveParams = z.infer<typeof PredictLiveParamsSchema>;

/** "Record from here" in a followed debugpy session (Python 3.12+): the rest of the stopped call, adopted as a run; answered by a TraceResult with its trace. */
export const RecordFromHereParamsSchema = z.object({
  sessionId: z.string().min(1),
  workDoneToken: z.union([z.string(), z.number()]).optional(),
});
export type RecordFromHereParams = z.infer<typeof RecordFromHereParamsSchema>;

export const Methods = {
  trace: 'execverify/trace',
  adopt: 'execverify/adopt',
  predict: 'execverify/predict',
  predictTest: 'execverify/predictTest',
  reveal: 'execverify/reveal',
  verify: 'execverify/verify',
  addSample: 'execverify/addSample',
  export: 'execverify/export',
  inputs: 'execverify/inputs',
  health: 'execverify/health',
  panel: 'execverify/panel',
  stepChanged: 'execverify/stepChanged',
  setTrust: 'execverify/setTrust',
  inline: 'execverify/inline',
  runChanged: 'execverify/runChanged',
  notice: 'execverify/notice',
  dap: 'execverify/dap',
  liveStopped: 'execverify/liveStopped',
  liveResumed: 'execverify/liveResumed',
  liveEnded: 'execverify/liveEnded',
  predictLive: 'execverify/predictLive',
  recordFromHere: 'execverify/recordFromHere',
} as const;

/** Error codes carried in ResponseError.data.code so clients can react. */
export const ErrorCodeSchema = z.enum([
  'bad_params',
  'no_python',
  'unknown_run',
  'unknown_prediction',
  'syntax_error',
  'trace_failed',
  'endpoint_down',
  'untrusted',
  'cancelled',
  'store_failed',
  'internal',
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;
