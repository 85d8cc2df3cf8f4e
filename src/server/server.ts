// The engine server: binds the LSP connection (CodeLens, inlay hints, custom
// requests, progress, cancellation) to the Engine and the RunStore. Any LSP
// client can drive it; the VS Code extension is one of them.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CodeLens,
  InlayHint,
  InlayHintKind,
  LSPErrorCodes,
  ResponseError,
  TextDocumentSyncKind,
  TextDocuments,
  CancellationToken,
  type Connection,
  type InitializeResult,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { ZodType } from 'zod';
import { type Entry, type Trace } from '../engine/trace/schema';
import type { Log } from '../engine/log';
import { safeParseTrace } from '../engine/trace/validate';
import { EngineError, type Engine, type ModelAccess } from './engine-port';
import { findFunctions, type PyFunction } from '../engine/python-functions';
import { findTestCalls, readTestFiles } from './inputs';
import {
  AddSampleParamsSchema,
  AdoptParamsSchema,
  ExportParamsSchema,
  type ExportParams,
  InitOptionsSchema,
  InputsParamsSchema,
  LiveEndedSchema,
  LiveResumedSchema,
  LiveStoppedSchema,
  Methods,
  PanelParamsSchema,
  PredictParamsSchema,
  PredictTestParamsSchema,
  PredictLiveParamsSchema,
  RecordFromHereParamsSchema,
  RevealParamsSchema,
  SetTrustSchema,
  StepChangedSchema,
  TraceParamsSchema,
  VerifyParamsSchema,
  parseSettings,
  type AddSampleResult,
  type ErrorCode,
  type ExportResult,
  type Health,
  type InlineResults,
  type InputCandidate,
  type Notice,
  type PanelData,
  type Prediction,
  type PredictTestParams,
  type TestPrediction,
  type Settings,
  type StepVerdict,
  type TraceParams,
  type TraceResult,
  type Verification,
} from './protocol';
import { RunStore, calledFunction, summarize, type PredictionRecord, type Run } from './runs';
import { inlineItems, panelData } from './views';
import { findTests, type PythonTest } from '../engine/simulate/test-functions';
import { predictAndRun, testKey, testLenses } from './test-lens';
import { LiveSessions } from './live-sessions';
import { LivePredict } from './live-predict';
import { recordLive } from './live-record';
import { RecordRefused } from '../engine/live/record';
import { pythonTracerDir } from '../engine/python';

/** Error code used in ResponseError for engine failures; `data.code` says which. */
const ENGINE_ERROR = -32001;

export class EngineServer {
  readonly documents = new TextDocuments(TextDocument);
  readonly store = new RunStore();
  private settings: Settings = parseSettings({});
  /** From the environment at start; changing it restarts the server. */
  private apiKey: string | undefined;
  private trusted = true;
  private inlineMode: 'notifications' | 'inlayHints' = 'inlayHints';
  private root: string | undefined;
  private pullConfiguration = false;
  /** The first settings pull; requests wait for it (bounded) so they never run with defaults by accident. */
  private settingsLoaded: Promise<void> = Promise.resolve();
  private readonly lensCache = new Map<string, { version: number; functions: PyFunction[]; tests: PythonTest[] }>();
  /** Predict Result: the latest prediction (and real result) per test. */
  private readonly testPredictions = new Map<string, TestPrediction>();
  /** The user's own debug sessions, followed by the editor (docs/live-debugging.md). */
  readonly live: LiveSessions;
  private readonly livePredict: LivePredict;

  constructor(
    private readonly connection: Connection,
    private readonly engine: Engine,
    private readonly log: Log = () => {},
  ) {
    this.live = new LiveSessions(
      connection,
      { trusted: () => this.trusted, lensesChanged: () => void connection.sendRequest('workspace/codeLens/refresh').catch(() => {}) },
      log,
    );
    this.livePredict = new LivePredict({
      engine,
      store: this.store,
      sessions: this.live,
      access: (action) => this.access(action),
      publish: (uri, runId) => this.publishInline(uri, runId),
      warn: (message) => this.notice({ severity: 'warning', message }),
      log,
    });
  }

  listen(): void {
    const c = this.connection;
    c.onInitialize((params): InitializeResult => {
      const init = InitOptionsSchema.safeParse(params.initializationOptions ?? {});
      const options = init.success ? init.data : InitOptionsSchema.parse({});
      this.settings = parseSettings(options.settings);
      this.apiKey = process.env.EXECVERIFY_API_KEY || undefined;
      this.trusted = options.trusted;
      this.inlineMode = options.inline;
      const folder = params.workspaceFolders?.[0]?.uri ?? params.rootUri ?? undefined;
      this.root = options.workspaceRoot ?? (folder ? uriToPath(folder) : undefined);
      this.pullConfiguration = params.capabilities.workspace?.configuration === true;
      this.log(
        `initialized: inline=${this.inlineMode} trusted=${this.trusted} root=${this.root ?? '(none)'} endpoint=${this.settings.baseUrl || '(baseline)'}`,
      );
      return {
        capabilities: {
          textDocumentSync: TextDocumentSyncKind.Incremental,
          codeLensProvider: { resolveProvider: false },
          inlayHintProvider: this.inlineMode === 'inlayHints' ? { resolveProvider: false } : undefined,
        },
        serverInfo: { name: 'execverify-server', version: '0.1.0' },
      };
    });
    c.onInitialized(() => {
      this.settingsLoaded = this.refreshSettings(undefined);
    });
    c.onDidChangeConfiguration((p) => {
      this.settingsLoaded = this.refreshSettings(p.settings);
    });
    c.onCodeLens((p) => this.codeLenses(p.textDocument.uri));
    c.languages.inlayHint.on((p) => this.inlayHints(p.textDocument.uri, p.range.start.line, p.range.end.line));

    this.handle(Methods.trace, TraceParamsSchema, (p, token) => this.trace(p, token));
    this.handle(Methods.adopt, AdoptParamsSchema, async (p) => this.adopt(p.uri, p.trace));
    this.handle(Methods.predict, PredictParamsSchema, (p, token) => this.predict(p.runId, p.step, p.workDoneToken, token));
    this.handle(Methods.predictTest, PredictTestParamsSchema, (p, token) => this.predictTest(p, token));
    this.handle(Methods.predictLive, PredictLiveParamsSchema, (p, token) => this.predictLive(p.sessionId, p.workDoneToken, token));
    this.handle(Methods.recordFromHere, RecordFromHereParamsSchema, (p, token) => this.recordFromHere(p.sessionId, p.workDoneToken, token));
    this.handle(Methods.reveal, RevealParamsSchema, (p, token) => this.reveal(p.predictionId, token));
    this.handle(Methods.verify, VerifyParamsSchema, (p, token) => this.verify(p.runId, p.workDoneToken, token));
    this.handle(Methods.addSample, AddSampleParamsSchema, (p) => this.addSample(p.verificationId, p.runId));
    this.handle(Methods.export, ExportParamsSchema, (p) => this.exportSamples(p));
    this.handle(Methods.inputs, InputsParamsSchema, (p) => this.inputs(p.uri, p.function));
    this.handle(Methods.panel, PanelParamsSchema, (p) => this.panel(p.runId));
    c.onRequest(Methods.health, (_p: unknown, token: CancellationToken) => this.health(token));

    c.onNotification(Methods.stepChanged, (raw: unknown) => {
      const p = StepChangedSchema.safeParse(raw);
      if (p.success) void this.stepChanged(p.data).catch((e) => this.log(`stepChanged failed: ${String(e)}`));
    });
    c.onNotification(Methods.liveStopped, (raw: unknown) => {
      const p = LiveStoppedSchema.safeParse(raw);
      if (p.success) this.live.stopped(p.data);
    });
    c.onNotification(Methods.liveResumed, (raw: unknown) => {
      const p = LiveResumedSchema.safeParse(raw);
      if (p.success) this.live.resumed(p.data);
    });
    c.onNotification(Methods.liveEnded, (raw: unknown) => {
      const p = LiveEndedSchema.safeParse(raw);
      if (p.success) this.live.ended(p.data);
    });
    c.onNotification(Methods.setTrust, (raw: unknown) => {
      const p = SetTrustSchema.safeParse(raw);
      if (!p.success) return;
      this.trusted = p.data.trusted;
      // Trust changes which settings the client may send (workspace values now apply): read them again.
      this.settingsLoaded = this.refreshSettings(undefined);
    });
    c.onShutdown(async () => {
      await this.engine.close();
    });
    this.documents.onDidClose((e) => {
      this.lensCache.delete(e.document.uri);
      for (const key of this.testPredictions.keys()) if (key.startsWith(`${e.document.uri}#`)) this.testPredictions.delete(key);
    });
    this.documents.listen(c);
    c.listen();
  }

  /** Registers a request whose params are validated by `schema`; failures become clear ResponseErrors. */
  private handle<T>(method: string, schema: ZodType<T>, run: (params: T, token: CancellationToken) => Promise<unknown>): void {
    this.connection.onRequest(method, async (raw: unknown, token: CancellationToken) => {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        return new ResponseError(
          ENGINE_ERROR,
          `Bad ${method} parameters: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
          { code: 'bad_params' },
        );
      }
      try {
        await Promise.race([this.settingsLoaded, new Promise((r) => setTimeout(r, 2_000))]);
        return await run(parsed.data, token);
      } catch (e) {
        if (token.isCancellationRequested || (e instanceof EngineError && e.code === 'cancelled')) {
          return new ResponseError(LSPErrorCodes.RequestCancelled, `${method} cancelled`, { code: 'cancelled' });
        }
        if (e instanceof EngineError) {
          this.log(`${method}: ${e.code}: ${e.message}`);
          return new ResponseError(ENGINE_ERROR, e.message, { code: e.code });
        }
        this.log(`${method} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        return new ResponseError(
          ENGINE_ERROR,
          `ExecVerify hit an internal error (${e instanceof Error ? e.message : String(e)}); see the ExecVerify output for details.`,
          { code: 'internal' satisfies ErrorCode },
        );
      }
    });
  }

  private async refreshSettings(pushed: unknown): Promise<void> {
    if (this.pullConfiguration) {
      try {
        this.settings = parseSettings(await this.connection.workspace.getConfiguration('execverify'));
      } catch (e) {
        this.log(`could not read settings: ${String(e)}`);
      }
    } else if (pushed && typeof pushed === 'object' && 'execverify' in pushed) {
      this.settings = parseSettings((pushed as { execverify: unknown }).execverify);
    }
  }

  /**
   * What a model request or the judge needs. The one way to the key and to the
   * settings that name the endpoint and the interpreter, so it is also where an
   * untrusted workspace stops: no model request (the key never leaves), no judge.
   */
  private access(action: string): ModelAccess {
    this.requireTrust(action);
    return { settings: this.settings, apiKey: this.apiKey };
  }

  // ------------------------------------------------------------ CodeLens & inline

  functionsOf(uri: string): PyFunction[] {
    return this.scanned(uri).functions;
  }

  private scanned(uri: string): { functions: PyFunction[]; tests: PythonTest[] } {
    const doc = this.documents.get(uri);
    // A C file is served for a live lldb session's lens: it has no Python functions or tests.
    if (!doc || doc.languageId !== 'python') return { functions: [], tests: [] };
    const cached = this.lensCache.get(uri);
    if (cached && cached.version === doc.version) return cached;
    const source = doc.getText();
    const scan = { version: doc.version, functions: findFunctions(source), tests: findTests(source) };
    this.lensCache.set(uri, scan);
    return scan;
  }

  codeLenses(uri: string): CodeLens[] {
    const lenses: CodeLens[] = [];
    for (const fn of this.functionsOf(uri)) {
      if (!fn.topLevel) continue;
      const range = { start: { line: fn.line - 1, character: 0 }, end: { line: fn.line - 1, character: 0 } };
      lenses.push({ range, command: { title: 'Trace…', command: 'execverify.trace', arguments: [uri, fn.name] } });
      lenses.push({ range, command: { title: 'Verify whole call', command: 'execverify.verifyCall', arguments: [uri, fn.name] } });
    }
    lenses.push(...testLenses(uri, this.scanned(uri).tests, this.testPredictions, this.trusted));
    const stop = this.store.stop;
    if (stop && stop.uri === uri && stop.line !== undefined && stop.runId !== null) {
      const range = { start: { line: stop.line - 1, character: 0 }, end: { line: stop.line - 1, character: 0 } };
      lenses.push({ range, command: { title: 'Predict next step', command: 'execverify.predictNextStep', arguments: [stop.runId, stop.step] } });
      const pending = this.store.latestPrediction(uri);
      if (pending && !pending.verdict && pending.prediction.runId === stop.runId) {
        const r = { start: { line: pending.prediction.line - 1, character: 0 }, end: { line: pending.prediction.line - 1, character: 0 } };
        lenses.push({ range: r, command: { title: 'Show verdict now', command: 'execverify.revealVerdict', arguments: [pending.prediction.id] } });
      }
    }
    // A followed live session stopped in this file: the same lens, for its stopped line.
    for (const { session, line } of this.live.stoppedIn(uri)) {
      const range = { start: { line: line - 1, character: 0 }, end: { line: line - 1, character: 0 } };
      lenses.push({ range, command: { title: 'Predict next step', command: 'execverify.predictNextStep', arguments: [{ sessionId: session.id }] } });
    }
    return lenses.sort((a, b) => a.range.start.line - b.range.start.line);
  }

  inlayHints(uri: string, fromLine: number, toLine: number): InlayHint[] {
    const doc = this.documents.get(uri);
    return inlineItems(this.store, uri)
      .filter((item) => item.line - 1 >= fromLine && item.line - 1 <= toLine)
      .map((item) => {
        const end = doc
          ? doc.getText({ start: { line: item.line - 1, character: 0 }, end: { line: item.line, character: 0 } }).replace(/\r?\n$/, '').length
          : 0;
        return { position: { line: item.line - 1, character: end }, label: ` ${item.text}`, kind: InlayHintKind.Type, paddingLeft: true, tooltip: item.hover };
      });
  }

  /** Tells the client that inline results of `uri` (and the panel rows of `runId`) changed. */
  private publishInline(uri: string, runId?: string): void {
    if (runId) void this.connection.sendNotification(Methods.runChanged, { runId });
    if (this.inlineMode === 'notifications') {
      const message: InlineResults = { uri, items: inlineItems(this.store, uri) };
      void this.connection.sendNotification(Methods.inline, message);
    } else {
      void this.connection.languages.inlayHint.refresh().catch(() => {});
    }
  }

  private baselineNoticeShown = false;

  /** Says once per session that the baseline answered because no endpoint is set. */
  private baselineNotice(answerer: { kind: string; note?: string | undefined }): void {
    if (answerer.kind !== 'baseline' || !answerer.note || this.baselineNoticeShown) return;
    this.baselineNoticeShown = true;
    this.notice({ severity: 'info', message: answerer.note, action: 'execverify.openSettings' });
  }

  private isolationNoticeShown = false;

  /** Says once per session that code ran without the OS sandbox (docs/security.md). */
  private isolationNotice(trace: Trace): void {
    const isolation = trace.python?.isolation ?? trace.runtime?.isolation;
    if (isolation === undefined || isolation.startsWith('bubblewrap+seccomp') || this.isolationNoticeShown) return;
    this.isolationNoticeShown = true;
    this.notice({
      severity: 'warning',
      message:
        `ExecVerify ran your code NOT ISOLATED on this machine (${isolation.startsWith('seccomp') ? 'a seccomp filter only: no read-only file system, no private network' : 'no sandbox at all'}). ` +
        'Install bubblewrap (apt-get install bubblewrap) on Linux with user namespaces; see docs/security.md.',
    });
  }

  private notice(notice: Notice): void {
    void this.connection.sendNotification(Methods.notice, notice);
  }

  // ------------------------------------------------------------ requests

  private async sourceOf(uri: string): Promise<{ file: string; source: string }> {
    const file = uriToPath(uri);
    const open = this.documents.get(uri);
    if (open) return { file, source: open.getText() };
    try {
      return { file, source: await fs.readFile(file, 'utf8') };
    } catch {
      throw new EngineError('bad_params', `Cannot read ${file}. Save the file and try again.`);
    }
  }

  /** Refuses `action` in an untrusted workspace: nothing runs there but this server, and no model is asked. */
  private requireTrust(action: string): void {
    if (!this.trusted) {
      throw new EngineError(
        'untrusted',
        `This workspace is not trusted, so ExecVerify does not ${action}: it runs no code, no judge and asks no model there (recorded traces can still be replayed). Trust the workspace (Manage Workspace Trust) to trace, predict and verify.`,
      );
    }
  }

  async trace(params: TraceParams, token: CancellationToken): Promise<TraceResult> {
    this.requireTrust('trace');
    const { uri } = params;
    const { file, source } = await this.sourceOf(uri);
    const entry: Entry = params.entry ? { kind: 'call', expr: params.entry } : { kind: 'script', args: params.args ?? [] };
    const label = params.entry ?? path.basename(file);
    const run = await this.withProgress(`ExecVerify: tracing ${label}`, params.workDoneToken, token, async (signal, report) => {
      report('running under the tracer');
      const trace = await this.engine.trace(
        { file, source, entry, cwd: params.cwd, env: params.env, python: params.python, limits: params.limits, via: params.via, settings: this.settings },
        signal,
      );
      return this.store.addRun({ uri, file, entry: label, trace });
    });
    const fn = params.entry ? calledFunction(params.entry) : undefined;
    if (fn && params.entry) this.store.remember(uri, fn, params.entry);
    const summary: TraceResult = summarize(run);
    this.isolationNotice(run.trace);
    // The replay debugger gets the trace in the reply: validated once, when the tracer produced it.
    if (params.wantTrace) summary.trace = run.trace;
    if (run.trace.outcome.kind === 'limit') {
      this.notice({
        severity: 'warning',
        message: `The run of ${label} ${summary.outcome}. Raise execverify.limits in the settings to record more.`,
        action: 'execverify.openSettings',
      });
    }
    return summary;
  }

  adopt(uri: string, raw: unknown): TraceResult {
    const parsed = safeParseTrace(raw);
    if (!parsed.ok) throw new EngineError('bad_params', `Not an ExecVerify trace: ${parsed.error}`);
    const trace = parsed.trace;
    const entry =
      trace.entry.kind === 'call'
        ? trace.entry.expr
        : trace.entry.kind === 'function'
          ? `${trace.entry.target}(${trace.entry.args})`
          : path.basename(uriToPath(uri));
    return summarize(this.store.addRun({ uri, file: uriToPath(uri), entry, trace }));
  }

  private requireRun(runId: string): Run {
    const run = this.store.run(runId);
    if (!run) throw new EngineError('unknown_run', `No recorded run ${runId} (it may have been evicted); trace the call again.`);
    return run;
  }

  async predict(runId: string, step: number, workDoneToken: string | number | undefined, token: CancellationToken): Promise<Prediction> {
    const access = this.access('predict the next step');
    const run = this.requireRun(runId);
    const at = run.trace.steps[step];
    if (!at) throw new EngineError('bad_params', `Step ${step} is outside the run (it has ${run.trace.steps.length} steps).`);
    const result = await this.withProgress('ExecVerify: predicting the next step', workDoneToken, token, (signal) =>
      this.engine.predictStep(run.trace, step, access, signal),
    );
    const prediction: Prediction = {
      id: this.store.newId('pred'),
      runId,
      uri: run.uri,
      step,
      line: at.line,
      nextLine: result.nextLine,
      values: result.values,
      answerer: result.answerer,
      usage: result.usage,
      problems: result.problems,
    };
    const record: PredictionRecord = { prediction, result, verdict: undefined };
    this.store.addPrediction(record);
    this.baselineNotice(result.answerer);
    if (this.settings.reveal === 'immediately') await this.judge(record, token);
    this.publishInline(run.uri, run.id);
    void this.connection.sendRequest('workspace/codeLens/refresh').catch(() => {});
    return prediction;
  }

  /** Predict next step in the user's own debug session: shown now, judged when the session steps (live-predict.ts). */
  async predictLive(sessionId: string, workDoneToken: string | number | undefined, token: CancellationToken): Promise<Prediction> {
    this.requireTrust('predict the next step');
    const prediction = await this.withProgress('ExecVerify: predicting the next step', workDoneToken, token, (signal, report) =>
      this.livePredict.predict(sessionId, signal, report),
    );
    this.baselineNotice(prediction.answerer);
    return prediction;
  }

  /**
   * Record from here: the rest of the call stopped in the user's debugpy
   * session (live-record.ts), adopted as a run as a replayed trace file is;
   * the reply carries the trace for the replay debugger. A refusal (not
   * debugpy, Python 3.8–3.11) is one line saying why.
   */
  async recordFromHere(sessionId: string, workDoneToken: string | number | undefined, token: CancellationToken): Promise<TraceResult> {
    this.requireTrust('record from the debug session');
    const trace = await this.withProgress('ExecVerify: recording the rest of the call', workDoneToken, token, (signal, report) =>
      recordLive({ sessions: this.live, tracerDir: pythonTracerDir() }, sessionId, signal, report).catch((e: unknown) => {
        throw e instanceof RecordRefused ? new EngineError('trace_failed', `Cannot record from here: ${e.message}`) : e;
      }),
    );
    const result = this.adopt(pathToFileURL(trace.files[0]!.path).href, trace);
    return { ...result, trace };
  }

  /** Predict Result: the prediction first (shown at once), then the test's real run beside it. */
  async predictTest(params: PredictTestParams, token: CancellationToken): Promise<TestPrediction> {
    const access = this.access('predict and run the test');
    const { file, source } = await this.sourceOf(params.uri);
    // The test (and, on its own, a tested call the tracer cannot see inside it) in the sandbox; trusted workspaces only.
    const runEntry = async (expr: string, runSignal: AbortSignal): Promise<Trace> => {
      this.requireTrust('run the test');
      const trace = await this.engine.trace(
        { file, source, entry: { kind: 'call', expr }, cwd: undefined, env: undefined, python: undefined, limits: undefined, settings: this.settings },
        runSignal,
      );
      this.isolationNotice(trace);
      return trace;
    };
    const result = await this.withProgress(`ExecVerify: predicting ${params.name}`, params.workDoneToken, token, (signal, report) =>
      predictAndRun(
        this.engine,
        access,
        { id: this.store.newId('test'), uri: params.uri, file, source, name: params.name, line: params.line },
        {
          show: async (prediction, test) => {
            this.testPredictions.set(testKey(params.uri, test), prediction);
            // Awaited: the client asks for the lenses (with the prediction) before the test starts; a client without refresh fails it at once.
            await this.connection.sendRequest('workspace/codeLens/refresh').catch(() => {});
          },
          run: async (test, runSignal) => {
            const trace = await runEntry(test.entry, runSignal);
            return { runId: this.store.addRun({ uri: params.uri, file, entry: test.entry, trace }).id, trace };
          },
          evaluate: (expr, runSignal) => runEntry(expr, runSignal),
          report,
        },
        signal,
      ),
    );
    this.baselineNotice(result.answerer);
    return result;
  }

  private async judge(record: PredictionRecord, token: CancellationToken): Promise<StepVerdict> {
    if (record.verdict) return record.verdict;
    const access = this.access('judge the prediction');
    if (this.livePredict.isLive(record.prediction.runId)) {
      throw new EngineError(
        'bad_params',
        'A live step is judged when the debug session steps on: step over the line (F10) and its verdict appears — there is no recording to reveal it from.',
      );
    }
    const run = this.requireRun(record.prediction.runId);
    const signal = abortSignalOf(token);
    const j = await this.engine.judgeStep(run.trace, record.prediction.step, record.result, access, signal);
    record.verdict = {
      predictionId: record.prediction.id,
      runId: run.id,
      step: record.prediction.step,
      line: record.prediction.line,
      actualNextLine: j.actualNextLine,
      actualValues: j.actualValues,
      questions: j.questions,
      ok: j.questions.length > 0 && j.questions.every((q) => q.ok),
    };
    return record.verdict;
  }

  async reveal(predictionId: string, token: CancellationToken): Promise<StepVerdict> {
    const record = this.store.prediction(predictionId);
    if (!record) throw new EngineError('unknown_prediction', `No prediction ${predictionId}; predict the step again.`);
    const verdict = await this.judge(record, token);
    this.publishInline(record.prediction.uri, record.prediction.runId);
    return verdict;
  }

  async stepChanged(p: { runId: string | null; step: number; uri?: string; line?: number; ended?: boolean }): Promise<void> {
    const before = this.store.stop;
    this.store.stop = p.ended ? null : { runId: p.runId, step: p.step, uri: p.uri, line: p.line };
    void this.connection.sendRequest('workspace/codeLens/refresh').catch(() => {});
    if (p.runId === null || p.ended || !this.trusted) return;
    // The debugger revealed the step after a prediction: its verdict can be shown now.
    for (const record of this.store.predictionsFor(p.runId)) {
      if (!record.verdict && p.step > record.prediction.step) {
        await this.judge(record, CancellationToken.None);
        this.publishInline(record.prediction.uri, record.prediction.runId);
      }
    }
    if (before?.uri && before.uri !== p.uri) this.publishInline(before.uri);
    // A new session: drop the previous run's prediction from view.
    if (p.uri && before?.runId !== p.runId) this.publishInline(p.uri);
  }

  async verify(runId: string, workDoneToken: string | number | undefined, token: CancellationToken): Promise<Verification> {
    const access = this.access('verify the call');
    const run = this.requireRun(runId);
    const result = await this.withProgress(`ExecVerify: verifying ${run.entry}`, workDoneToken, token, (signal) =>
      this.engine.verifyCall(run.trace, access, signal),
    );
    const verification: Verification = {
      id: this.store.newId('ver'),
      runId,
      uri: run.uri,
      template: result.template,
      questions: result.questions,
      rewards: result.rewards,
      answerer: result.answerer,
      usage: result.usage,
      problems: result.problems,
    };
    this.store.addVerification({ verification, result });
    this.baselineNotice(result.answerer);
    this.publishInline(run.uri, run.id);
    return verification;
  }

  private storeDir(): string {
    const dir = this.settings.datasetDir;
    if (path.isAbsolute(dir)) return dir;
    if (!this.root)
      throw new EngineError(
        'store_failed',
        'Open a folder (workspace) first: the sample store lives inside it, or set execverify.datasetDir to an absolute path.',
      );
    return path.join(this.root, dir);
  }

  async addSample(verificationId: string | undefined, runId: string | undefined): Promise<AddSampleResult> {
    const v = verificationId ? this.store.verification(verificationId) : undefined;
    if (verificationId && !v) throw new EngineError('bad_params', `No verification ${verificationId}; verify the call again.`);
    if (!v && runId && this.livePredict.isLive(runId)) {
      const storeDir = this.storeDir();
      return { ...(await this.livePredict.addSample(runId, storeDir, this.root)), store: storeDir };
    }
    const run = this.requireRun(v ? v.verification.runId : (runId ?? ''));
    const storeDir = this.storeDir();
    const r = await this.engine.addSample({
      trace: run.trace,
      file: run.file,
      entry: run.entry,
      verification: v?.result,
      settings: this.settings,
      storeDir,
      root: this.root,
    });
    return { ...r, store: storeDir };
  }

  async exportSamples(params: ExportParams): Promise<ExportResult> {
    const out = path.isAbsolute(params.out) || !this.root ? params.out : path.join(this.root, params.out);
    return this.engine.exportSamples(this.storeDir(), { format: params.format, out }, this.settings);
  }

  async inputs(uri: string, fn: string): Promise<InputCandidate[]> {
    const out: InputCandidate[] = [];
    const seen = new Set<string>();
    const add = (c: InputCandidate) => {
      if (!seen.has(c.entry)) {
        seen.add(c.entry);
        out.push(c);
      }
    };
    const history = this.store.entries(uri, fn);
    if (history[0]) add({ entry: history[0], source: 'lastRun', detail: 'last run' });
    for (const e of history.slice(1)) add({ entry: e, source: 'history', detail: 'earlier input' });
    if (this.root) for (const c of findTestCalls(fn, await readTestFiles(this.root))) add(c);
    return out;
  }

  async panel(runId: string): Promise<PanelData> {
    return panelData(this.requireRun(runId), this.store);
  }

  async health(token: CancellationToken): Promise<Health> {
    // Untrusted: the endpoint is not even probed (a probe would carry the key).
    if (!this.trusted)
      return { state: 'untrusted', endpoint: '', model: '', message: 'Restricted Mode: ExecVerify asks no model and runs no code in an untrusted workspace.' };
    return this.engine.health(this.access('check the model endpoint'), abortSignalOf(token));
  }

  /** Runs `work` under work-done progress (client token or server-initiated) and aborts it on cancellation. */
  private async withProgress<T>(
    title: string,
    workDoneToken: string | number | undefined,
    token: CancellationToken,
    work: (signal: AbortSignal, report: (message: string) => void) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const sub = token.onCancellationRequested(() => controller.abort());
    let reporter;
    let progressSub: { dispose(): void } | undefined;
    if (workDoneToken !== undefined) {
      reporter = this.connection.window.attachWorkDoneProgress(workDoneToken);
    } else {
      const created = await this.connection.window.createWorkDoneProgress().catch(() => undefined);
      reporter = created;
      progressSub = created?.token.onCancellationRequested(() => controller.abort());
    }
    reporter?.begin(title, undefined, undefined, true);
    try {
      const result = await work(controller.signal, (m) => reporter?.report(m));
      if (controller.signal.aborted) throw new EngineError('cancelled', 'cancelled');
      return result;
    } catch (e) {
      if (controller.signal.aborted) throw new EngineError('cancelled', 'cancelled');
      throw e;
    } finally {
      reporter?.done();
      sub.dispose();
      progressSub?.dispose();
    }
  }
}

export function uriToPath(uri: string): string {
  return uri.startsWith('file:') ? fileURLToPath(uri) : uri;
}

function abortSignalOf(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  else token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}
