// Workspace trust: tracing runs the user's code, so in an untrusted workspace
// nothing runs. Commands ask `trust.require()` and explain how to trust.
import * as vscode from 'vscode';

export interface TrustGate {
  /** True when code may run; otherwise tells the user why not and how to trust, and returns false. */
  require(action: string): Promise<boolean>;
  onDidGrant(listener: () => void): vscode.Disposable;
}

export const UNTRUSTED_MESSAGE = (action: string) =>
  `ExecVerify cannot ${action}: it runs your code, and this workspace is not trusted. Trust the workspace to trace, predict and verify.`;

export function createTrustGate(): TrustGate {
  return {
    async require(action) {
      if (vscode.workspace.isTrusted) return true;
      const choice = await vscode.window.showWarningMessage(UNTRUSTED_MESSAGE(action), 'Manage Workspace Trust');
      if (choice === 'Manage Workspace Trust') await vscode.commands.executeCommand('workbench.trust.manage');
      return false;
    },
    onDidGrant: (listener) => vscode.workspace.onDidGrantWorkspaceTrust(listener),
  };
}
