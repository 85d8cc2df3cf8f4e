// "ExecVerify: Set API Key": the endpoint's key lives in VS Code's
// SecretStorage only. It is never logged, never put in settings or traces.
import * as vscode from 'vscode';
import type { Log } from './log';

const KEY = 'execverify.apiKey';

export interface ApiKeyStore {
  get(): Promise<string | undefined>;
  onDidChange(listener: () => void | Promise<void>): vscode.Disposable;
}

export function registerSecrets(context: vscode.ExtensionContext, deps: { log: Log }): ApiKeyStore {
  const changed = new vscode.EventEmitter<void>();
  context.subscriptions.push(
    changed,
    context.secrets.onDidChange((e) => {
      if (e.key === KEY) changed.fire();
    }),
    vscode.commands.registerCommand('execverify.setApiKey', async () => {
      const value = await vscode.window.showInputBox({
        title: 'ExecVerify: API key for the model endpoint',
        prompt: 'Stored in VS Code’s secret storage. Leave empty to remove the stored key.',
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return;
      if (value.trim() === '') {
        await context.secrets.delete(KEY);
        deps.log('API key removed');
        void vscode.window.showInformationMessage('ExecVerify: API key removed.');
      } else {
        await context.secrets.store(KEY, value.trim());
        deps.log('API key stored');
        void vscode.window.showInformationMessage('ExecVerify: API key stored in secret storage.');
      }
    }),
  );
  return {
    get: async () => (await context.secrets.get(KEY)) || undefined,
    onDidChange: (listener) => changed.event(() => void listener()),
  };
}
