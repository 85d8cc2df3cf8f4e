// The replay debug adapter: translates DAP requests into ReplayRuntime moves
// and recorded values into DAP stacks, scopes and variables. It records the
// run through an injected Recorder, so it runs the same inline in VS Code,
// standalone over stdio / TCP, and under DebugClient in plain Node tests.
import * as path from 'node:path';
import {
  DebugSession,
  Event,
  ExitedEvent,
  Handles,
  InitializedEvent,
  OutputEvent,
  ProgressEndEvent,
  ProgressStartEvent,
  Scope,
  Source,
  StackFrame,
  StoppedEvent,
  TerminatedEvent,
  Thread,
} from '@vscode/debugadapter';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { type Outcome, type Trace, type Value } from '../engine/trace/schema';
import { describeOutcome, displayValue } from '../engine/trace/outcome';
import { safeParseTrace } from '../engine/trace/validate';
import { parseLaunchConfig, toRecordRequest, type RecordRequest } from './launch-config';
import { reprOf, typeOf, type Py } from './recorded-expression';
import { DapEvents, DapRequests, type StepEventBody } from './dap-protocol';
import { ReplayRuntime, type ReplayTrace, type RuntimeStop } from './replay-runtime';

export const THREAD_ID = 1;

export type RecordResult = { ok: true; trace: Trace } | { ok: false; message: string };

/** Runs a program under the tracer. Errors are values with a message for the user. */
export interface Recorder {
  record(request: RecordRequest, signal: AbortSignal): Promise<RecordResult>;
}

/** A file read, or why not (a message that names the file and the problem). */
export type FileRead = { ok: true; text: string } | { ok: false; reason: 'missing' | 'unreadable' | 'not_regular' | 'too_large'; message: string };

/** The most the adapter reads of a trace file, and of a program it records. */
export const MAX_TRACE_FILE_BYTES = 256 * 1024 * 1024;
export const MAX_PROGRAM_BYTES = 16 * 1024 * 1024;

export interface ReplaySessionDeps {
  recorder: Recorder;
  /** Turns a trace into random-access form (the engine's decoder). */
  decode(trace: Trace): ReplayTrace;
  /** Reads a regular UTF-8 file of at most `maxBytes`; never blocks on FIFOs or devices. */
  readFile(file: string, maxBytes: number): Promise<FileRead>;
  /** Base for relative paths in the launch configuration. */
  cwd: string;
  /** Told about every trace this session replays (the editor UI uses it). */
  onTrace?(trace: Trace): void;
}

type VariableHandle = { kind: 'locals'; frame: number; step: number } | { kind: 'value'; value: Value; evaluateName?: string };

const EXIT_CODES: Record<Outcome['kind'], number> = { returned: 0, raised: 1, exited: 0, limit: 124, tampered: 1, crashed: 1 };

export class ReplayDebugSession extends DebugSession {
  private runtime: ReplayRuntime | undefined;
  private readonly handles = new Handles<VariableHandle>();
  private progressSupported = false;
  private recording: { id: string; abort: AbortController } | undefined;
  private configurationDone!: () => void;
  private readonly configured = new Promise<void>((resolve) => (this.configurationDone = resolve));
  /** Per Trace.files index: a path on disk with the same source, or undefined (served by sourceReference). */
  private sourcePaths: (string | undefined)[] = [];
  private ended = false;

  constructor(private readonly deps: ReplaySessionDeps) {
    super();
    this.setDebuggerLinesStartAt1(true);
    this.setDebuggerColumnsStartAt1(true);
  }

  /** The runtime, once a trace is loaded (for the inline extension and tests). */
  get replay(): ReplayRuntime | undefined {
    return this.runtime;
  }

  protected override initializeRequest(response: DebugProtocol.InitializeResponse, args: DebugProtocol.InitializeRequestArguments): void {
    this.progressSupported = args.supportsProgressReporting === true;
    response.body = {
      supportsConfigurationDoneRequest: true,
      supportsStepBack: true,
      supportsGotoTargetsRequest: true,
      supportsRestartFrame: true,
      supportsConditionalBreakpoints: true,
      supportsHitConditionalBreakpoints: true,
      supportsEvaluateForHovers: true,
      supportsExceptionInfoRequest: true,
      supportsCancelRequest: true,
      supportsTerminateRequest: true,
      supportsSingleThreadExecutionRequests: false,
      supportsSetVariable: false,
      exceptionBreakpointFilters: [
        { filter: 'uncaught', label: 'Uncaught Exceptions', description: 'Stop where the exception that ended the run was raised', default: true },
        { filter: 'raised', label: 'Raised Exceptions', description: 'Stop wherever an exception was raised, even if it was caught', default: false },
      ],
    };
    this.sendResponse(response);
  }

  protected override async launchRequest(response: DebugProtocol.LaunchResponse, rawArgs: DebugProtocol.LaunchRequestArguments): Promise<void> {
    const parsed = parseLaunchConfig(rawArgs);
    if (!parsed.ok) return this.fail(response, parsed.message);
    const config = parsed.config;

    let trace: Trace;
    if (config.traceFile) {
      const loaded = await this.loadTraceFile(path.resolve(config.cwd ?? this.deps.cwd, config.traceFile));
      if (!loaded.ok) return this.fail(response, loaded.message);
      trace = loaded.trace;
    } else {
      const request = toRecordRequest(config, this.deps.cwd);
      const programFile = await this.deps.readFile(request.program, MAX_PROGRAM_BYTES);
      if (!programFile.ok) {
        const why = programFile.reason === 'missing' ? '' : ` (${programFile.message})`;
        return this.fail(response, `Cannot read the program ${request.program}${why}. Set "program" in the launch configuration to an existing Python file.`);
      }
      const recorded = await this.record(request);
      if (!recorded.ok) return this.fail(response, recorded.message);
      trace = recorded.trace;
    }

    if (trace.stdout.text) this.sendEvent(new OutputEvent(trace.stdout.text + (trace.stdout.truncated ? '\n[stdout truncated]\n' : ''), 'stdout'));
    if (trace.stderr.text) this.sendEvent(new OutputEvent(trace.stderr.text + (trace.stderr.truncated ? '\n[stderr truncated]\n' : ''), 'stderr'));
    if (trace.steps.length === 0) {
      return this.fail(response, `Nothing was recorded: ${describeOutcome(trace, { subject: true })}`);
    }
    if (trace.outcome.kind === 'limit') {
      this.sendEvent(
        new OutputEvent(
          `The run hit a limit (${trace.outcome.limit}): ${trace.outcome.message}. Replaying the ${trace.steps.length} recorded steps.\n`,
          'important',
        ),
      );
    }

    await this.load(trace);
    this.sendEvent(new InitializedEvent());
    this.sendResponse(response);
    await this.configured;
    this.runtime!.start(config.stopOnEntry ?? true);
  }

  /** Prepares the runtime for a trace and wires its events to DAP. */
  private async load(trace: Trace): Promise<void> {
    const runtime = new ReplayRuntime(this.deps.decode(trace));
    this.runtime = runtime;
    // A path named in the trace is shown from disk only when it is a regular file holding exactly the recorded
    // source: never read more than that source's size, and anything else is served from the trace.
    this.sourcePaths = await Promise.all(
      trace.files.map(async (f) => {
        if (!path.isAbsolute(f.path)) return undefined;
        const onDisk = await this.deps.readFile(f.path, Buffer.byteLength(f.source, 'utf8'));
        return onDisk.ok && onDisk.text === f.source ? f.path : undefined;
      }),
    );
    runtime.on('stopped', (stop) => this.onStopped(stop));
    runtime.on('end', (outcome) => this.onEnd(outcome));
    runtime.on('output', (text) => this.sendEvent(new OutputEvent(text + '\n', 'important')));
    this.deps.onTrace?.(trace);
  }

  private async record(request: RecordRequest): Promise<RecordResult> {
    const id = `execverify-record-${Date.now()}`;
    const abort = new AbortController();
    this.recording = { id, abort };
    const started = Date.now();
    if (this.progressSupported) {
      const what = request.entry.kind === 'call' ? request.entry.expr : path.basename(request.program);
      this.sendEvent(new ProgressStartEvent(id, 'Recording run', `${path.basename(request.program)}: ${what}`));
    }
    try {
      const result = await this.deps.recorder.record(request, abort.signal);
      if (this.progressSupported) {
        const msg = result.ok ? `${result.trace.steps.length} events recorded in ${Date.now() - started} ms` : 'recording failed';
        this.sendEvent(new ProgressEndEvent(id, msg));
      }
      if (abort.signal.aborted) return { ok: false, message: 'Recording was cancelled.' };
      return result;
    } catch (err) {
      if (this.progressSupported) this.sendEvent(new ProgressEndEvent(id, 'recording failed'));
      return { ok: false, message: `Recording failed: ${(err as Error).message}` };
    } finally {
      this.recording = undefined;
    }
  }

  private async loadTraceFile(file: string): Promise<RecordResult> {
    const read = await this.deps.readFile(file, MAX_TRACE_FILE_BYTES);
    if (!read.ok) {
      const why =
        read.reason === 'missing'
          ? ''
          : ` (${read.message}; a trace file is read only when it is a regular file of at most ${MAX_TRACE_FILE_BYTES / (1024 * 1024)} MiB)`;
      return { ok: false, message: `Cannot read the trace file ${file}${why}. Set "traceFile" to a trace written by \`execverify trace\`.` };
    }
    let json: unknown;
    try {
      json = JSON.parse(read.text);
    } catch (err) {
      return { ok: false, message: `The trace file ${file} is not JSON: ${(err as Error).message}` };
    }
    const parsed = safeParseTrace(json);
    if (!parsed.ok) return { ok: false, message: `The trace file ${file} is not an ExecVerify trace: ${parsed.error}` };
    return { ok: true, trace: parsed.trace };
  }

  /** Reports a launch problem in the Debug Console and ends the session cleanly. */
  private fail(response: DebugProtocol.LaunchResponse, message: string): void {
    this.sendEvent(new OutputEvent(message + '\n', 'important'));
    this.sendResponse(response);
    this.ended = true;
    this.sendEvent(new TerminatedEvent());
  }

  protected override cancelRequest(response: DebugProtocol.CancelResponse, args: DebugProtocol.CancelArguments): void {
    if (this.recording && args.progressId === this.recording.id) this.recording.abort.abort();
    this.sendResponse(response);
  }

  protected override configurationDoneRequest(response: DebugProtocol.ConfigurationDoneResponse): void {
    this.sendResponse(response);
    this.configurationDone();
  }

  // ------------------------------------------------------------ events

  private onStopped(stop: RuntimeStop): void {
    this.handles.reset();
    const event = new StoppedEvent(stop.reason, THREAD_ID) as DebugProtocol.StoppedEvent;
    if (stop.description) event.body.description = stop.description;
    if (stop.hitBreakpointIds) event.body.hitBreakpointIds = stop.hitBreakpointIds;
    if (stop.reason === 'exception') {
      const exc = this.runtime!.exceptionHere();
      if (exc) {
        event.body.description = exc.uncaught ? 'Paused on uncaught exception' : 'Paused on raised exception';
        event.body.text = `${exc.type}: ${exc.message}`;
      }
    }
    event.body.allThreadsStopped = true;
    this.sendEvent(event);
    this.sendEvent(new Event(DapEvents.step, this.stepBody()));
  }

  /** The `execverify/step` body for the cursor. */
  stepBody(): StepEventBody {
    const runtime = this.runtime!;
    const i = runtime.position;
    const step = runtime.trace.steps[i]!;
    const run = runtime.runOfStep(i);
    return {
      stepIndex: i,
      frameId: step.frame + 1,
      line: this.convertDebuggerLineToClient(step.line),
      file: runtime.trace.files[step.file]?.path ?? '',
      ...(run ? { run: run.run, runs: run.runs } : {}),
    };
  }

  private onEnd(outcome: Outcome): void {
    if (this.ended) return;
    this.ended = true;
    const trace = this.runtime!.trace;
    this.sendEvent(
      new OutputEvent(`${describeOutcome(trace, { subject: true })}\n`, outcome.kind === 'returned' || outcome.kind === 'exited' ? 'console' : 'important'),
    );
    const exited = new ExitedEvent(outcome.kind === 'exited' ? outcome.code : outcome.kind === 'crashed' ? (outcome.exitCode ?? 1) : EXIT_CODES[outcome.kind]);
    (exited.body as Record<string, unknown>).outcome = outcome;
    this.sendEvent(exited);
    this.sendEvent(new TerminatedEvent());
  }

  // ------------------------------------------------------------ motion

  private withRuntime(response: DebugProtocol.Response, move: (runtime: ReplayRuntime) => void): void {
    const runtime = this.runtime;
    if (!runtime) return this.sendErrorResponse(response, { id: 1001, format: 'No recording is loaded yet.', showUser: false });
    if (this.ended) return this.sendErrorResponse(response, { id: 1002, format: 'The replay has ended.', showUser: false });
    this.sendResponse(response);
    move(runtime);
  }

  protected override continueRequest(response: DebugProtocol.ContinueResponse): void {
    response.body = { allThreadsContinued: true };
    this.withRuntime(response, (r) => r.continue(false));
  }
  protected override reverseContinueRequest(response: DebugProtocol.ReverseContinueResponse): void {
    this.withRuntime(response, (r) => r.continue(true));
  }
  protected override nextRequest(response: DebugProtocol.NextResponse): void {
    this.withRuntime(response, (r) => r.step('over'));
  }
  protected override stepInRequest(response: DebugProtocol.StepInResponse): void {
    this.withRuntime(response, (r) => r.step('in'));
  }
  protected override stepOutRequest(response: DebugProtocol.StepOutResponse): void {
    this.withRuntime(response, (r) => r.step('out'));
  }
  protected override stepBackRequest(response: DebugProtocol.StepBackResponse): void {
    this.withRuntime(response, (r) => r.step('over', true));
  }
  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    // A replay is never running between requests: there is nothing to pause.
    this.sendResponse(response);
  }

  protected override restartFrameRequest(response: DebugProtocol.RestartFrameResponse, args: DebugProtocol.RestartFrameArguments): void {
    const frame = args.frameId - 1;
    if (!this.runtime?.stack().some((f) => f.frame === frame)) {
      return this.sendErrorResponse(response, { id: 1003, format: `Frame ${args.frameId} is not on the current stack.`, showUser: true });
    }
    this.withRuntime(response, (r) => r.restartFrame(frame));
  }

  protected override gotoTargetsRequest(response: DebugProtocol.GotoTargetsResponse, args: DebugProtocol.GotoTargetsArguments): void {
    const runtime = this.runtime;
    const file = runtime && this.fileIndexOf(args.source);
    if (!runtime || file === undefined) {
      response.body = { targets: [] };
      return this.sendResponse(response);
    }
    const line = this.convertClientLineToDebugger(args.line);
    const { targets, total } = runtime.gotoTargets(file, line);
    response.body = {
      targets: targets.map((t) => ({
        id: t.step + 1,
        label: `run ${t.run} of ${t.runs} (step ${t.step})${t.run === targets.length && total > targets.length ? ` — first ${targets.length} of ${total} shown` : ''}`,
        line: args.line,
      })),
    };
    this.sendResponse(response);
  }

  protected override gotoRequest(response: DebugProtocol.GotoResponse, args: DebugProtocol.GotoArguments): void {
    const step = args.targetId - 1;
    if (!this.runtime || step < 0 || step >= this.runtime.length) {
      return this.sendErrorResponse(response, { id: 1004, format: `Unknown goto target ${args.targetId}.`, showUser: true });
    }
    this.withRuntime(response, (r) => r.jumpTo(step, 'goto'));
  }

  protected override customRequest(command: string, response: DebugProtocol.Response, args: unknown): void {
    const runtime = this.runtime;
    if (command === DapRequests.jumpToStep) {
      const stepIndex = (args as { stepIndex?: unknown } | undefined)?.stepIndex;
      if (!runtime || typeof stepIndex !== 'number' || !Number.isInteger(stepIndex) || stepIndex < 0 || stepIndex >= runtime.length) {
        return this.sendErrorResponse(response, {
          id: 1005,
          format: `stepIndex must be an integer in [0, ${runtime ? runtime.length - 1 : 0}].`,
          showUser: false,
        });
      }
      return this.withRuntime(response, (r) => r.jumpTo(stepIndex, 'goto'));
    }
    if (command === DapRequests.trace) {
      if (!runtime) return this.sendErrorResponse(response, { id: 1001, format: 'No recording is loaded yet.', showUser: false });
      const trace = runtime.trace;
      const full = (args as { full?: unknown } | undefined)?.full === true;
      response.body = {
        stepIndex: runtime.position,
        steps: trace.steps.length,
        schema: trace.schema,
        entry: trace.entry,
        files: trace.files.map((f) => f.path),
        outcome: trace.outcome,
        python: trace.python,
        ...(full ? { trace } : {}),
      };
      return this.sendResponse(response);
    }
    super.customRequest(command, response, args);
  }

  // ------------------------------------------------------------ breakpoints

  protected override setBreakPointsRequest(response: DebugProtocol.SetBreakpointsResponse, args: DebugProtocol.SetBreakpointsArguments): void {
    const specs = (args.breakpoints ?? []).map((b) => ({
      line: this.convertClientLineToDebugger(b.line),
      ...(b.condition ? { condition: b.condition } : {}),
      ...(b.hitCondition ? { hitCondition: b.hitCondition } : {}),
    }));
    const file = this.fileIndexOf(args.source);
    if (!this.runtime || file === undefined) {
      response.body = {
        breakpoints: specs.map((s) => ({
          verified: false,
          line: args.breakpoints ? this.convertDebuggerLineToClient(s.line) : undefined,
          message: 'this file is not part of the recording',
        })),
      };
      return this.sendResponse(response);
    }
    response.body = {
      breakpoints: this.runtime.setBreakpoints(file, specs).map((b) => ({
        id: b.id,
        verified: b.verified,
        line: this.convertDebuggerLineToClient(b.line),
        source: args.source,
        ...(b.message ? { message: b.message } : {}),
      })),
    };
    this.sendResponse(response);
  }

  protected override setExceptionBreakPointsRequest(
    response: DebugProtocol.SetExceptionBreakpointsResponse,
    args: DebugProtocol.SetExceptionBreakpointsArguments,
  ): void {
    this.runtime?.setExceptionFilters(args.filters);
    this.sendResponse(response);
  }

  protected override exceptionInfoRequest(response: DebugProtocol.ExceptionInfoResponse): void {
    const exc = this.runtime?.exceptionHere();
    if (!exc) return this.sendErrorResponse(response, { id: 1006, format: 'Not stopped on an exception.', showUser: false });
    response.body = {
      exceptionId: exc.type,
      description: exc.message,
      breakMode: exc.uncaught ? 'unhandled' : 'always',
      details: { typeName: exc.type, message: exc.message },
    };
    this.sendResponse(response);
  }

  // ------------------------------------------------------------ state

  protected override threadsRequest(response: DebugProtocol.ThreadsResponse): void {
    response.body = { threads: [new Thread(THREAD_ID, 'recorded run')] };
    this.sendResponse(response);
  }

  protected override stackTraceRequest(response: DebugProtocol.StackTraceResponse, args: DebugProtocol.StackTraceArguments): void {
    const stack = this.runtime?.stack() ?? [];
    const start = args.startFrame ?? 0;
    const count = args.levels ? args.levels : stack.length;
    response.body = {
      stackFrames: stack
        .slice(start, start + count)
        .map((f) => new StackFrame(f.frame + 1, f.fn, this.sourceOf(f.file), this.convertDebuggerLineToClient(f.line))),
      totalFrames: stack.length,
    };
    this.sendResponse(response);
  }

  protected override scopesRequest(response: DebugProtocol.ScopesResponse, args: DebugProtocol.ScopesArguments): void {
    const runtime = this.runtime;
    const frame = args.frameId - 1;
    if (!runtime || !runtime.stack().some((f) => f.frame === frame)) {
      response.body = { scopes: [] };
      return this.sendResponse(response);
    }
    const step = runtime.position;
    const scopes: DebugProtocol.Scope[] = [new Scope('Locals', this.handles.create({ kind: 'locals', frame, step }), false)];
    scopes[0]!.presentationHint = 'locals';
    const module = runtime.moduleFrame();
    if (module && module.frame !== frame) {
      // The tracer records locals per frame; a traced `<module>` frame's locals are the globals.
      const globals = new Scope('Globals', this.handles.create({ kind: 'locals', frame: module.frame, step }), true);
      scopes.push(globals);
    }
    response.body = { scopes };
    this.sendResponse(response);
  }

  protected override variablesRequest(response: DebugProtocol.VariablesResponse, args: DebugProtocol.VariablesArguments): void {
    const handle = this.handles.get(args.variablesReference);
    const runtime = this.runtime;
    if (!handle || !runtime) {
      response.body = { variables: [] };
      return this.sendResponse(response);
    }
    let variables: DebugProtocol.Variable[];
    if (handle.kind === 'locals') {
      const locals = runtime.locals(handle.frame);
      variables = Object.entries(locals).map(([name, value]) => this.toVariable(name, value, name));
      const step = runtime.trace.steps[handle.step]!;
      if (step.frame === handle.frame && step.event === 'return' && step.value) {
        variables.unshift(this.toVariable(step.yielded ? '(yielded)' : '(return value)', step.value));
      }
      if (step.frame === handle.frame && step.event === 'exception' && step.exc) {
        variables.unshift({
          name: '(exception)',
          value: `${step.exc.type}: ${step.exc.message}`,
          type: step.exc.type,
          variablesReference: 0,
          presentationHint: { attributes: ['readOnly'] },
        });
      }
    } else {
      variables = this.children(handle.value, handle.evaluateName, args.filter);
    }
    if (args.start !== undefined || args.count !== undefined) {
      const start = args.start ?? 0;
      variables = variables.slice(start, args.count ? start + args.count : undefined);
    }
    response.body = { variables };
    this.sendResponse(response);
  }

  /** Children of a recorded container: elements / entries as indexed, attributes (and a truncation note) as named. */
  private children(value: Value, parent: string | undefined, filter: 'indexed' | 'named' | undefined): DebugProtocol.Variable[] {
    const indexed: DebugProtocol.Variable[] = [];
    const named: DebugProtocol.Variable[] = [];
    if (filter !== 'named') {
      value.items?.forEach((item, i) =>
        indexed.push(this.toVariable(String(i), item, parent && value.type !== 'set' && value.type !== 'frozenset' ? `${parent}[${i}]` : undefined)),
      );
      value.entries?.forEach(([k, v]) => indexed.push(this.toVariable(k.repr, v, parent && k.literal ? `${parent}[${k.repr}]` : undefined)));
    }
    if (filter !== 'indexed') {
      for (const [name, v] of Object.entries(value.attrs ?? {})) named.push(this.toVariable(name, v, parent ? `${parent}.${name}` : undefined));
      const note = truncationNote(value);
      if (note) named.push({ name: '(truncated)', value: note, variablesReference: 0, presentationHint: { kind: 'virtual', attributes: ['readOnly'] } });
    }
    return [...indexed, ...named];
  }

  private toVariable(name: string, value: Value, evaluateName?: string): DebugProtocol.Variable {
    const indexedCount = (value.items?.length ?? 0) + (value.entries?.length ?? 0);
    const namedCount = Object.keys(value.attrs ?? {}).length + (truncationNote(value) ? 1 : 0);
    const variable: DebugProtocol.Variable = {
      name,
      value: displayValue(value),
      type: value.type,
      variablesReference: indexedCount + namedCount > 0 ? this.handles.create({ kind: 'value', value, ...(evaluateName ? { evaluateName } : {}) }) : 0,
      presentationHint: { attributes: ['readOnly'] },
    };
    if (evaluateName) variable.evaluateName = evaluateName;
    if (indexedCount) variable.indexedVariables = indexedCount;
    if (namedCount) variable.namedVariables = namedCount;
    return variable;
  }

  protected override evaluateRequest(response: DebugProtocol.EvaluateResponse, args: DebugProtocol.EvaluateArguments): void {
    const runtime = this.runtime;
    if (!runtime) return this.sendErrorResponse(response, { id: 1001, format: 'No recording is loaded yet.', showUser: false });
    const frame = args.frameId !== undefined ? args.frameId - 1 : undefined;
    const result = runtime.evaluate(args.expression, frame);
    if (!result.ok) {
      return this.sendErrorResponse(response, { id: 1007, format: result.message, showUser: false });
    }
    const v = result.value;
    if (v.t === 'rec') {
      const variable = this.toVariable(args.expression, v.value, args.expression);
      response.body = {
        result: variable.value,
        type: variable.type,
        variablesReference: variable.variablesReference,
        ...(variable.indexedVariables ? { indexedVariables: variable.indexedVariables } : {}),
        ...(variable.namedVariables ? { namedVariables: variable.namedVariables } : {}),
      };
    } else {
      response.body = { result: computedRepr(v), type: typeOf(v), variablesReference: 0 };
    }
    this.sendResponse(response);
  }

  protected override sourceRequest(response: DebugProtocol.SourceResponse, args: DebugProtocol.SourceArguments): void {
    const ref = args.source?.sourceReference ?? args.sourceReference;
    const file = this.runtime?.trace.files[ref - 1];
    if (!file) return this.sendErrorResponse(response, { id: 1008, format: `Unknown source ${ref}.`, showUser: false });
    response.body = { content: file.source, mimeType: 'text/x-python' };
    this.sendResponse(response);
  }

  protected override terminateRequest(response: DebugProtocol.TerminateResponse): void {
    this.recording?.abort.abort();
    this.sendResponse(response);
    if (!this.ended) {
      this.ended = true;
      this.sendEvent(new TerminatedEvent());
    }
  }

  protected override disconnectRequest(response: DebugProtocol.DisconnectResponse, args: DebugProtocol.DisconnectArguments): void {
    this.recording?.abort.abort();
    super.disconnectRequest(response, args);
  }

  // ------------------------------------------------------------ sources

  private sourceOf(file: number): Source {
    const onDisk = this.sourcePaths[file];
    const recorded = this.runtime!.trace.files[file]!;
    if (onDisk) return new Source(path.basename(onDisk), this.convertDebuggerPathToClient(onDisk));
    // Not on disk, or changed since the run: serve the exact source that ran.
    const source = new Source(`${path.basename(recorded.path)} (recorded)`, undefined, file + 1, 'recorded');
    return source;
  }

  private fileIndexOf(source: DebugProtocol.Source): number | undefined {
    const files = this.runtime?.trace.files;
    if (!files) return undefined;
    if (source.sourceReference && files[source.sourceReference - 1]) return source.sourceReference - 1;
    if (!source.path) return undefined;
    const wanted = path.resolve(this.convertClientPathToDebugger(source.path));
    const i = files.findIndex((f) => path.resolve(f.path) === wanted);
    return i >= 0 ? i : undefined;
  }
}

function truncationNote(value: Value): string | undefined {
  if (!value.truncated) return undefined;
  const shown = (value.items?.length ?? 0) + (value.entries?.length ?? 0);
  if (value.len !== undefined && value.len > shown && (value.items || value.entries)) return `${shown} of ${value.len} elements were recorded`;
  return 'the recorded value was cut at a size bound';
}

function computedRepr(v: Py): string {
  return reprOf(v);
}
