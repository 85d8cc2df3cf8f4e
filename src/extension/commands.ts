// The ExecVerify commands: Trace…, Verify whole call, Predict next step, Show
// verdict now, the panel, Add to dataset, Export…. Each one validates what it
// gets, asks the engine server, and reports failures with what to do next.
import * as vscode from 'vscode';
import { findFunctions } from '../engine/python-functions';
import {
  AddSampleResultSchema,
  EXPORT_FORMAT_DESCRIPTIONS,
  ExportFormatSchema,
  ExportResultSchema,
  InputsResultSchema,
  Methods,
  NoticeSchema,
  PredictionSchema,
  StepVerdictSchema,
  TestPredictionSchema,
  TraceResultSchema,
  VerificationSchema,
  type ExportFormat,
  type InputCandidate,
  type Prediction,
  type StepVerdict,
  type TestPrediction,
  type Verification,
} from '../server/protocol';
import { blockAt, findTests } from '../engine/simulate/test-functions';
import { toEngineError, type EngineClient } from './engine-client';
import type { Log } from './log';
import { readSettings } from './settings';
import type { PanelHost } from './panel';
import type { ReplayBridge } from './replay';
import type { LiveBridge } from './live-predict';
import { DEBUG_TYPE } from '../adapter/dap-protocol';
import type { StatusBarView } from './statusbar';
import { ASKS_MODEL, RUNS_JUDGE, type TrustGate } from './trust';

export interface CommandDeps {
  client: EngineClient;
  trust: TrustGate;
  panel: PanelHost;
  status: StatusBarView;
  replay: Pick<ReplayBridge, 'current'>;
  /** Followed live debug sessions (debugpy, lldb, …): "Predict next step" there too. */
  live?: LiveBridge;
  log: Log;
}

const ENTRY_SHAPE = /^\s*[A-Za-z_][A-Za-z0-9_.]*\s*\(.*\)\s*$/s;

/** Shows an engine failure with the action that fixes it; cancellations stay silent. */
export async function showEngineError(e: unknown, log: Log): Promise<void> {
  const err = toEngineError(e);
  if (err.code === 'cancelled') return;
  log(`${err.code}: ${err.message}`);
  const w = vscode.window;
  switch (err.code) {
    case 'no_python': {
      const c = await w.showErrorMessage(`ExecVerify: ${err.message}`, 'Set Python Path');
      if (c) await vscode.commands.executeCommand('workbench.action.openSettings', 'execverify.pythonPath');
      return;
    }
    case 'endpoint_down': {
      const c = await w.showWarningMessage(`ExecVerify: ${err.message}`, 'Open Settings', 'Set API Key');
      if (c === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'execverify');
      if (c === 'Set API Key') await vscode.commands.executeCommand('execverify.setApiKey');
      return;
    }
    case 'untrusted': {
      const c = await w.showWarningMessage(`ExecVerify: ${err.message}`, 'Manage Workspace Trust');
      if (c) await vscode.commands.executeCommand('workbench.trust.manage');
      return;
    }
    case 'internal': {
      const c = await w.showErrorMessage(`ExecVerify: ${err.message}`, 'Show Log');
      if (c) await vscode.commands.executeCommand('execverify.showLog');
      return;
    }
    default:
      await w.showErrorMessage(`ExecVerify: ${err.message}`);
  }
}

/** The top-level function around the cursor of the active Python editor. */
function functionAtCursor(): { uri: string; fn: string } | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'python') return undefined;
  const line = editor.selection.active.line + 1;
  let name: string | undefined;
  for (const f of findFunctions(editor.document.getText())) {
    if (f.line > line) break;
    if (f.topLevel) name = f.name;
  }
  return name ? { uri: editor.document.uri.toString(), fn: name } : undefined;
}

/**
 * Asks for the input of a call to `fn`: the last run, earlier inputs, calls
 * found in the workspace's tests, or a call typed by the user.
 */
export async function pickEntry(client: EngineClient, uri: string, fn: string): Promise<string | undefined> {
  let candidates: InputCandidate[] = [];
  try {
    candidates = await client.request(Methods.inputs, { uri, function: fn }, InputsResultSchema);
  } catch {
    // No candidates is fine: the user can still type a call.
  }
  const TYPE = '$(edit) Enter a call…';
  type Item = vscode.QuickPickItem & { entry?: string };
  const icon = { lastRun: '$(history)', history: '$(history)', test: '$(beaker)' } as const;
  const items: Item[] = [
    { label: TYPE, detail: `e.g. ${fn}(…) with literal arguments` },
    ...candidates.map((c) => ({ label: `${icon[c.source]} ${c.entry}`, description: c.detail, entry: c.entry })),
  ];
  let entry: string | undefined;
  if (candidates.length > 0) {
    const choice = await vscode.window.showQuickPick(items, {
      title: `ExecVerify: input for ${fn}`,
      placeHolder: 'Pick an input from the last run, your history or the tests, or type one',
    });
    if (!choice) return undefined;
    entry = choice.entry;
  }
  if (entry === undefined) {
    entry = await vscode.window.showInputBox({
      title: `ExecVerify: call ${fn} with…`,
      value: `${fn}()`,
      valueSelection: [fn.length + 1, fn.length + 1],
      prompt: 'A call expression evaluated in the module, e.g. f([3, 1, 2], key=None)',
      validateInput: (v) => (ENTRY_SHAPE.test(v) ? undefined : `Enter a call such as ${fn}(1, 2)`),
    });
  }
  return entry?.trim() || undefined;
}

export function registerCommands(context: vscode.ExtensionContext, deps: CommandDeps): void {
  const { client, log } = deps;
  const lastVerification = new Map<string, Verification>();
  let lastPrediction: Prediction | undefined;
  /** The run of the last live step predicted (a followed debug session's): what the panel and "Add to dataset" take while one is stopped. */
  let lastLiveRun: string | undefined;
  const liveRun = () => (deps.live?.current() ? lastLiveRun : undefined);

  const guarded =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R | undefined> => {
      try {
        return await fn(...args);
      } catch (e) {
        await showEngineError(e, log);
        return undefined;
      }
    };

  const resolveTarget = (uri?: unknown, fn?: unknown) => {
    if (typeof uri === 'string' && typeof fn === 'string') return { uri, fn };
    return functionAtCursor();
  };

  const trace = guarded(async (uri?: unknown, fn?: unknown, entryArg?: unknown) => {
    if (!(await deps.trust.require('trace this call'))) return undefined;
    const target = resolveTarget(uri, fn);
    if (!target)
      return void vscode.window.showInformationMessage('ExecVerify: put the cursor in a top-level Python function, or use the “Trace…” CodeLens above it.');
    const entry = typeof entryArg === 'string' ? entryArg : await pickEntry(client, target.uri, target.fn);
    if (!entry) return undefined;
    const file = vscode.Uri.parse(target.uri);
    const folder = vscode.workspace.getWorkspaceFolder(file);
    const started = await vscode.debug.startDebugging(folder, {
      type: DEBUG_TYPE,
      request: 'launch',
      name: `ExecVerify: ${entry}`,
      program: file.fsPath,
      entry,
      stopOnEntry: true,
    });
    if (!started) log(`the replay session for ${entry} did not start`);
    return started;
  });

  const verifyCall = guarded(async (uri?: unknown, fn?: unknown, entryArg?: unknown): Promise<Verification | undefined> => {
    if (!(await deps.trust.require('verify this call'))) return undefined;
    const target = resolveTarget(uri, fn);
    if (!target)
      return void vscode.window.showInformationMessage(
        'ExecVerify: put the cursor in a top-level Python function, or use the “Verify whole call” CodeLens above it.',
      );
    const entry = typeof entryArg === 'string' ? entryArg : await pickEntry(client, target.uri, target.fn);
    if (!entry) return undefined;
    const run = await client.request(Methods.trace, { uri: target.uri, entry }, TraceResultSchema);
    const verification = await client.request(Methods.verify, { runId: run.runId }, VerificationSchema);
    lastVerification.set(run.runId, verification);
    deps.status.showRewards(verification);
    await deps.panel.show(run.runId);
    if (verification.problems.length > 0) {
      void vscode.window.showWarningMessage(`ExecVerify: the answer had problems (scored as wrong): ${verification.problems.slice(0, 3).join('; ')}`);
    }
    return verification;
  });

  const predictNextStep = guarded(async (runIdArg?: unknown, stepArg?: unknown): Promise<Prediction | undefined> => {
    if (!(await deps.trust.require('predict the next step', ASKS_MODEL))) return undefined;
    // The live lens names its session; the keybinding and the menus mean the active session, a replay or a followed live one.
    const replayStop = typeof runIdArg === 'string' && typeof stepArg === 'number' ? { runId: runIdArg, step: stepArg } : undefined;
    const lensSession = (runIdArg as { sessionId?: unknown } | undefined)?.sessionId;
    const liveSession = typeof lensSession === 'string' ? lensSession : replayStop ? undefined : deps.live?.current()?.sessionId;
    const stop = replayStop ?? (liveSession ? undefined : deps.replay.current());
    let prediction: Prediction;
    if (liveSession) prediction = await client.request(Methods.predictLive, { sessionId: liveSession }, PredictionSchema);
    else if (stop) prediction = await client.request(Methods.predict, { runId: stop.runId, step: stop.step }, PredictionSchema);
    else
      return void vscode.window.showInformationMessage(
        'ExecVerify: start a replay session first (the “Trace…” CodeLens above a function), or stop your own debug session at a line, then predict from the line it stops on.',
      );
    lastPrediction = prediction;
    if (liveSession) lastLiveRun = prediction.runId;
    // Unusable answers get a message; a missing variable is already drawn inline as "(no answer)".
    if (prediction.nextLine === null && prediction.problems.length > 0) {
      void vscode.window.showWarningMessage(`ExecVerify: the model's answer could not be used: ${prediction.problems[0]}`);
    } else if (prediction.problems.length > 0) {
      log(`prediction ${prediction.id}: ${prediction.problems.join('; ')}`);
    }
    return prediction;
  });

  // Predict Result: the server shows the prediction (a lens) before the test runs, then the real result beside it.
  const predictResult = guarded(async (uriArg?: unknown, nameArg?: unknown, lineArg?: unknown): Promise<TestPrediction | undefined> => {
    if (!(await deps.trust.require('predict and run this test', ASKS_MODEL))) return undefined;
    let target =
      typeof uriArg === 'string' && typeof nameArg === 'string' && typeof lineArg === 'number' ? { uri: uriArg, name: nameArg, line: lineArg } : undefined;
    const editor = vscode.window.activeTextEditor;
    if (!target && editor?.document.languageId === 'python') {
      const cursor = editor.selection.active.line + 1;
      const text = editor.document.getText();
      const lines = text.split('\n');
      // The test whose def or body holds the cursor.
      const test = findTests(text).find((t) => t.line <= cursor && cursor < t.line + blockAt(lines, t.line - 1).split('\n').length);
      if (test) target = { uri: editor.document.uri.toString(), name: test.name, line: test.line };
    }
    if (!target)
      return void vscode.window.showInformationMessage(
        'ExecVerify: put the cursor in a pytest or unittest test, or use the “Predict result” CodeLens above it.',
      );
    const result = await client.request(Methods.predictTest, target, TestPredictionSchema);
    const [passes, call] = result.answers;
    // ✓ / ✗: the judge's verdict on the prediction; nothing where the run gives no truth to judge against.
    const mark = (ok: boolean | null | undefined) => (ok === true ? ' ✓' : ok === false ? ' ✗' : '');
    // A model's answer may be any length: the message keeps the start of each.
    const cut = (t: string) => (t.length > 80 ? `${t.slice(0, 79)}…` : t);
    const verdict = passes?.predicted === 'True' ? 'passes' : passes?.predicted === 'False' ? 'fails' : `“${cut(passes?.predicted ?? '')}”`;
    void vscode.window.showInformationMessage(
      `ExecVerify ${result.test}: predicted ${verdict}${mark(passes?.ok)}; really ${cut(result.real?.detail ?? 'not run')}` +
        (call ? `; ${call.asked} → predicted ${cut(call.predicted)}, real ${cut(call.actual ?? 'not recorded')}${mark(call.ok)}` : ''),
    );
    if (result.problems.length > 0) log(`test prediction ${result.id}: ${result.problems.join('; ')}`);
    return result;
  });

  const revealVerdict = guarded(async (predictionId?: unknown): Promise<StepVerdict | undefined> => {
    if (!(await deps.trust.require('judge the prediction', RUNS_JUDGE))) return undefined;
    const id = typeof predictionId === 'string' ? predictionId : lastPrediction?.id;
    if (!id) return void vscode.window.showInformationMessage('ExecVerify: nothing to reveal yet: use “Predict next step” first.');
    return client.request(Methods.reveal, { predictionId: id }, StepVerdictSchema);
  });

  const openPanel = guarded(async (runIdArg?: unknown) => {
    const runId =
      typeof runIdArg === 'string' ? runIdArg : (liveRun() ?? deps.replay.current()?.runId ?? deps.panel.currentRunId() ?? [...lastVerification.keys()].at(-1));
    if (!runId) return void vscode.window.showInformationMessage('ExecVerify: trace or verify a call first; the panel shows that run.');
    await deps.panel.show(runId);
    return true;
  });

  const addSample = guarded(async (runIdArg?: unknown) => {
    const runId = typeof runIdArg === 'string' ? runIdArg : (liveRun() ?? deps.panel.currentRunId() ?? deps.replay.current()?.runId ?? lastLiveRun);
    if (!runId) return void vscode.window.showInformationMessage('ExecVerify: trace or verify a call first, then add it to the dataset.');
    const verification = lastVerification.get(runId);
    const result = await client.request(Methods.addSample, verification ? { verificationId: verification.id } : { runId }, AddSampleResultSchema);
    void vscode.window.showInformationMessage(
      result.added ? `ExecVerify: sample ${result.id.slice(0, 12)} added to ${result.store}.` : `ExecVerify: this sample is already in ${result.store}.`,
    );
    return result;
  });

  const exportSamples = guarded(async (formatArg?: unknown, outArg?: unknown) => {
    const format =
      typeof formatArg === 'string' && ExportFormatSchema.safeParse(formatArg).success
        ? (formatArg as ExportFormat)
        : ((
            await vscode.window.showQuickPick(
              ExportFormatSchema.options.map((label) => ({ label, description: EXPORT_FORMAT_DESCRIPTIONS[label] })),
              { title: 'ExecVerify: export the sample store as…' },
            )
          )?.label as ExportFormat | undefined);
    if (!format) return undefined;
    let out = typeof outArg === 'string' ? outArg : undefined;
    if (!out) {
      const configured = readSettings().datasetDir;
      const datasetDir = typeof configured === 'string' && configured ? configured : '.execverify';
      out = await vscode.window.showInputBox({
        title: `ExecVerify: export ${format} to…`,
        value: `${datasetDir.replace(/\/+$/, '')}/export/${format}`,
        prompt: 'A folder (one file per split: train / validation / test) or a file name such as out.parquet. Relative paths are inside the workspace folder.',
        validateInput: (v) => (v.trim() ? undefined : 'Enter a folder or a file name'),
      });
      if (!out) return undefined;
    }
    const result = await client.request(Methods.export, { format, out }, ExportResultSchema);
    void vscode.window.showInformationMessage(
      `ExecVerify: exported ${result.records} records to ${result.files.length > 0 ? result.files.join(', ') : result.out}.`,
    );
    return result;
  });

  context.subscriptions.push(
    vscode.commands.registerCommand('execverify.trace', trace),
    vscode.commands.registerCommand('execverify.verifyCall', verifyCall),
    vscode.commands.registerCommand('execverify.predictNextStep', predictNextStep),
    vscode.commands.registerCommand('execverify.revealVerdict', revealVerdict),
    vscode.commands.registerCommand('execverify.predictResult', predictResult),
    vscode.commands.registerCommand('execverify.openPanel', openPanel),
    vscode.commands.registerCommand('execverify.addSample', addSample),
    vscode.commands.registerCommand('execverify.export', exportSamples),
    vscode.commands.registerCommand('execverify.openSettings', () => vscode.commands.executeCommand('workbench.action.openSettings', 'execverify')),
    client.onNotification(Methods.notice, (raw) => {
      const n = NoticeSchema.safeParse(raw);
      if (!n.success) return;
      const say =
        n.data.severity === 'error'
          ? vscode.window.showErrorMessage
          : n.data.severity === 'warning'
            ? vscode.window.showWarningMessage
            : vscode.window.showInformationMessage;
      const action = n.data.action;
      void Promise.resolve(action ? say(`ExecVerify: ${n.data.message}`, 'Fix…') : say(`ExecVerify: ${n.data.message}`)).then((c) => {
        if (c && action) void vscode.commands.executeCommand(action);
      });
    }),
  );
}
