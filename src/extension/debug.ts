// Registers the `execverify` replay debugger in VS Code: the adapter runs
// inline in the extension host (no extra process), and a configuration
// provider fills in defaults so F5 on a Python file just works.
import * as vscode from 'vscode';
import type { Trace } from '../engine/trace/schema';
import { DEBUG_TYPE } from '../adapter/dap-protocol';
import { replaySessionDeps } from '../adapter/node-deps';
import { ReplayDebugSession, type Recorder } from '../adapter/replay-debug-session';

export interface ReplayDebuggerDeps {
  /** The recorder backed by the extension's tracer pool (created lazily, shared by sessions). */
  recorder(): Recorder;
  /** Told about each replayed trace, with the VS Code session replaying it (and its traceFile), so the editor UI can follow the cursor. */
  onTrace?(trace: Trace, sessionId: string, traceFile?: string): void;
}

export function registerReplayDebugger(context: vscode.ExtensionContext, deps: ReplayDebuggerDeps): void {
  const factory: vscode.DebugAdapterDescriptorFactory = {
    createDebugAdapterDescriptor(session) {
      const cwd = session.workspaceFolder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
      // This factory knows the session: it hands the session id along with each trace (no round trip through the adapter).
      const traceFile = typeof session.configuration.traceFile === 'string' ? session.configuration.traceFile : undefined;
      const onTrace = deps.onTrace ? (trace: Trace) => deps.onTrace!(trace, session.id, traceFile) : undefined;
      const adapter = new ReplayDebugSession(replaySessionDeps({ recorder: trustedRecorder(deps.recorder), cwd, onTrace }));
      return new vscode.DebugAdapterInlineImplementation(adapter);
    },
  };
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, factory),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, configurationProvider),
  );
}

/**
 * The recorder a session gets: in an untrusted workspace it records nothing,
 * whatever launch configuration reached the adapter (resolveDebugConfiguration
 * already refuses; this holds for configurations that did not pass through it).
 */
export function trustedRecorder(recorder: () => Recorder): Recorder {
  return {
    record: async (request, signal) => {
      if (!vscode.workspace.isTrusted) {
        return {
          ok: false,
          message:
            'ExecVerify does not run code in an untrusted workspace. Trust the workspace (Manage Workspace Trust), or replay a recorded trace with "traceFile".',
        };
      }
      return recorder().record(request, signal);
    },
  };
}

const configurationProvider: vscode.DebugConfigurationProvider = {
  provideDebugConfigurations() {
    return [
      {
        type: DEBUG_TYPE,
        request: 'launch',
        name: 'ExecVerify: replay current file',
        program: '${file}',
        stopOnEntry: true,
      },
    ];
  },

  resolveDebugConfiguration(_folder, config) {
    // F5 without a launch.json: replay the active Python file as a script.
    if (!config.type && !config.request && !config.name) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId !== 'python') {
        void vscode.window.showInformationMessage('Open a Python file (or add an "execverify" launch configuration) to record and replay it.');
        return undefined;
      }
      config.type = DEBUG_TYPE;
      config.request = 'launch';
      config.name = 'ExecVerify: replay current file';
      config.program = editor.document.uri.fsPath;
    }
    config.stopOnEntry ??= true;
    // Recording runs the user's code; in an untrusted workspace only recorded traces are replayed.
    if (!vscode.workspace.isTrusted && !config.traceFile) {
      void vscode.window.showWarningMessage(
        'ExecVerify does not run code in an untrusted workspace. Trust the workspace, or replay a recorded trace with "traceFile".',
      );
      return undefined;
    }
    return config;
  },
};
