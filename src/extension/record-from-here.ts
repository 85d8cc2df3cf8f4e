// "ExecVerify: Record from Here" (docs/live-debugging.md#record-from-here): in
// the user's own debugpy session stopped on a line (Python 3.12+), the engine
// server records the rest of that call beside debugpy and adopts it as a run;
// the editor saves the trace and replays it in the `execverify` debugger, so
// the user can step back and forth and predict. Where it cannot record (not
// debugpy, Python 3.8–3.11) the server says why in one line.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { DEBUG_TYPE } from '../adapter/dap-protocol';
import { Methods, TraceResultSchema } from '../server/protocol';
import { showEngineError } from './commands';
import type { EngineClient } from './engine-client';
import type { LiveBridge } from './live-predict';
import type { Log } from './log';
import type { ReplayBridge } from './replay';
import { RUNS_CODE, type TrustGate } from './trust';

export interface RecordFromHereDeps {
  client: EngineClient;
  trust: TrustGate;
  live: LiveBridge;
  replay: Pick<ReplayBridge, 'adoptedFile'>;
  log: Log;
}

export function registerRecordFromHere(context: vscode.ExtensionContext, deps: RecordFromHereDeps): void {
  let recordings = 0;
  const recordFromHere = async (): Promise<string | undefined> => {
    try {
      if (!(await deps.trust.require('record from the debug session', RUNS_CODE))) return undefined;
      const stopped = deps.live.current();
      if (!stopped) {
        void vscode.window.showInformationMessage('ExecVerify: stop your Python debug session at a line of the function first, then record from there.');
        return undefined;
      }
      // The recording runs until the call returns: a notification says so, and its Cancel cancels the request.
      // The server reports into the request's own token instead of opening a second progress in the status bar.
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'ExecVerify: recording the rest of the call', cancellable: true },
        (_progress, token) =>
          deps.client.request(Methods.recordFromHere, { sessionId: stopped.sessionId, workDoneToken: `record-${++recordings}` }, TraceResultSchema, token),
      );
      if (!result.trace) throw new Error('the engine did not return the recorded trace');
      // Saved (temp + rename) where the replay debugger reads trace files; the user can replay it again from there.
      const dir = (context.storageUri ?? context.globalStorageUri).fsPath;
      await fs.mkdir(dir, { recursive: true });
      const first = result.trace.steps[0];
      const file = path.join(dir, `recorded-${first?.fn.replace(/[^\w.-]/g, '_') ?? 'call'}-${result.runId}.json`);
      await fs.writeFile(`${file}.tmp`, JSON.stringify(result.trace));
      await fs.rename(`${file}.tmp`, file);
      deps.replay.adoptedFile(file, result.runId);
      const name = `Replay ${first?.fn ?? 'the call'} from line ${first?.line ?? '?'}`;
      await vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], {
        type: DEBUG_TYPE,
        request: 'launch',
        name,
        traceFile: file,
        stopOnEntry: true,
      });
      return file;
    } catch (e) {
      await showEngineError(e, deps.log);
      return undefined;
    }
  };
  context.subscriptions.push(vscode.commands.registerCommand('execverify.recordFromHere', recordFromHere));
}
