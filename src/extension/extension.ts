// ExecVerify for VS Code. The list of registrations is in activation.ts; here
// the engine server is started for real, through vscode-languageclient.
import type * as vscode from 'vscode';
import { activateExtension } from './activation';
import { registerLanguageClient } from './language-client';

export function activate(context: vscode.ExtensionContext) {
  return activateExtension(context, registerLanguageClient);
}

export function deactivate(): void {
  // Every disposable, the language client included, is in context.subscriptions.
}
