// Follows the replay debugger: records runs through the engine server (so
// the server owns every trace a session replays), tells the server where the
// session stands (CodeLens "Predict next step", verdicts on stepping), and
// keeps the panel's selected row and the debugger's step in sync.
import { pathToFileURL } from 'node:url';
import * as vscode from 'vscode';
import { DapEvents, DapRequests, DEBUG_TYPE, StepEventBodySchema } from '../adapter/dap-protocol';
import type { Recorder, RecordResult } from '../adapter/replay-debug-session';
import type { RecordRequest } from '../adapter/launch-config';
import { type Trace } from '../engine/trace/schema';
import { Methods, TraceResultSchema, type DebuggerStop, type StepChanged } from '../server/protocol';
import type { EngineClient } from './engine-client';
import type { Log } from './log';
import type { PanelHost } from './panel';

/** The part of the debugger's `execverify/step` event body the editor uses. */
const StepEventSchema = StepEventBodySchema.partial().required({ stepIndex: true });

/** Where a replay session stands: a step of a known run. */
export type SessionStop = DebuggerStop & { sessionId: string; runId: string };

export interface ReplayBridge {
  recorder: Recorder;
  /** The debug adapter factory tells which session replays `trace` (the session's run id follows from it), and the trace file it read, if any. */
  onTrace(trace: Trace, sessionId: string, traceFile?: string): void;
  /** A trace file written for a run the server already has ("Record from here"): a session replaying it is that run, not a new one. */
  adoptedFile(traceFile: string, runId: string): void;
  /** Where the active replay session stands, if it has stopped on a step of a known run. */
  current(): SessionStop | undefined;
  /** Moves the replay session of `runId` to `step`. */
  jumpTo(runId: string, step: number): Promise<boolean>;
}

export function registerReplayBridge(context: vscode.ExtensionContext, deps: { client: EngineClient; panel: PanelHost; log: Log }): ReplayBridge {
  const recorded = new WeakMap<Trace, string>();
  const adoptedFiles = new Map<string, string>();
  const runOfSession = new Map<string, string>();
  const pendingStep = new Map<string, { step: number; uri: string | undefined; line: number | undefined }>();
  const stops = new Map<string, SessionStop>();

  const tellServer = (sessionId: string, step: number, uri: string | undefined, line: number | undefined) => {
    const runId = runOfSession.get(sessionId);
    if (!runId) {
      pendingStep.set(sessionId, { step, uri, line });
      return;
    }
    stops.set(sessionId, { sessionId, runId, step, uri, line });
    const message: StepChanged = { runId, step, uri, line };
    deps.client.notify(Methods.stepChanged, message);
    deps.panel.selectStep(runId, step);
  };

  const recorder: Recorder = {
    async record(request: RecordRequest, signal: AbortSignal): Promise<RecordResult> {
      const tokenSource = new vscode.CancellationTokenSource();
      signal.addEventListener('abort', () => tokenSource.cancel());
      try {
        const result = await deps.client.request(
          Methods.trace,
          {
            uri: pathToFileURL(request.program).href,
            ...(request.entry.kind === 'call' ? { entry: request.entry.expr } : { args: request.entry.kind === 'script' ? request.entry.args : [] }),
            cwd: request.cwd,
            env: request.env,
            python: request.python,
            limits: request.limits,
            ...(request.via ? { via: request.via } : {}),
            wantTrace: true,
          },
          TraceResultSchema,
          tokenSource.token,
        );
        const trace = result.trace;
        if (!trace) return { ok: false, message: 'The engine did not return the recorded trace.' };
        recorded.set(trace, result.runId);
        return { ok: true, trace };
      } catch (e) {
        return { ok: false, message: e instanceof Error ? e.message : String(e) };
      } finally {
        tokenSource.dispose();
      }
    },
  };

  const bridge: ReplayBridge = {
    recorder,
    adoptedFile(traceFile, runId) {
      adoptedFiles.set(traceFile, runId);
    },
    onTrace(trace, sessionId, traceFile) {
      const known = recorded.get(trace) ?? (traceFile !== undefined ? adoptedFiles.get(traceFile) : undefined);
      const announce = (runId: string) => {
        runOfSession.set(sessionId, runId);
        const pending = pendingStep.get(sessionId);
        pendingStep.delete(sessionId);
        if (pending) tellServer(sessionId, pending.step, pending.uri, pending.line);
      };
      if (known) return announce(known);
      // A trace the server has not seen (a "traceFile" launch): register it so predictions can refer to it.
      const first = trace.files[0]?.path ?? 'trace';
      void deps.client
        .request(Methods.adopt, { uri: pathToFileURL(first).href, trace }, TraceResultSchema)
        .then((r) => announce(r.runId))
        .catch((e) => deps.log(`could not register the replayed trace: ${e instanceof Error ? e.message : String(e)}`));
    },
    current() {
      const active = vscode.debug.activeDebugSession;
      return active ? stops.get(active.id) : [...stops.values()].at(-1);
    },
    async jumpTo(runId, step) {
      for (const [sessionId, id] of runOfSession) {
        if (id !== runId) continue;
        const session = vscode.debug.activeDebugSession?.id === sessionId ? vscode.debug.activeDebugSession : undefined;
        if (!session) continue;
        try {
          await session.customRequest(DapRequests.jumpToStep, { stepIndex: step });
          return true;
        } catch (e) {
          deps.log(`jumpToStep failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      return false;
    },
  };

  context.subscriptions.push(
    vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
      if (e.session.type !== DEBUG_TYPE) return;
      if (e.event === DapEvents.step) {
        const body = StepEventSchema.safeParse(e.body);
        if (!body.success) return deps.log(`ignored a malformed ${DapEvents.step} event`);
        const { stepIndex, file, line } = body.data;
        tellServer(e.session.id, stepIndex, file ? pathToFileURL(file).href : undefined, line);
      }
    }),
    vscode.debug.onDidTerminateDebugSession((session) => {
      const runId = runOfSession.get(session.id);
      runOfSession.delete(session.id);
      pendingStep.delete(session.id);
      stops.delete(session.id);
      if (runId) deps.client.notify(Methods.stepChanged, { runId, step: 0, ended: true } satisfies StepChanged);
    }),
    deps.panel.onDidSelectStep(({ runId, step }) => void bridge.jumpTo(runId, step)),
  );
  return bridge;
}
