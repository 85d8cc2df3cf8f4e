// Workspace trust: tracing runs the user's code, and predicting asks the
// model with the stored key and runs the judge, so in an untrusted workspace
// none of them happens. Commands ask `trust.require()` and explain how to trust.
import * as vscode from 'vscode';

export interface TrustGate {
  /** True when the action may run; otherwise tells the user why not and how to trust, and returns false. */
  require(action: string, why?: string): Promise<boolean>;
  onDidGrant(listener: () => void): vscode.Disposable;
}

export const RUNS_CODE = 'it runs your code';
export const ASKS_MODEL = 'it sends the run to your model endpoint and runs the Python judge';
export const RUNS_JUDGE = 'it runs the Python judge';

export const UNTRUSTED_MESSAGE = (action: string, why: string = RUNS_CODE) =>
  `ExecVerify cannot ${action}: ${why}, and this workspace is not trusted. Trust the workspace to trace, predict and verify.`;

export function createTrustGate(): TrustGate {
  return {
    async require(action, why) {
      if (vscode.workspace.isTrusted) return true;
      const choice = await vscode.window.showWarningMessage(UNTRUSTED_MESSAGE(action, why), 'Manage Workspace Trust');
      if (choice === 'Manage Workspace Trust') await vscode.commands.executeCommand('workbench.trust.manage');
      return false;
    },
    onDidGrant: (listener) => vscode.workspace.onDidGrantWorkspaceTrust(listener),
  };
}
