// The "ExecVerify" output channel: one place for the extension's and the
// engine server's log lines. Nothing that holds a key is ever passed here.
import * as vscode from 'vscode';
import type { Log } from '../engine/log';

export type { Log };

export function registerOutput(context: vscode.ExtensionContext): { log: Log; channel: vscode.OutputChannel } {
  const channel = vscode.window.createOutputChannel('ExecVerify');
  context.subscriptions.push(
    channel,
    vscode.commands.registerCommand('execverify.showLog', () => channel.show()),
  );
  const log: Log = (line) => channel.appendLine(`[${new Date().toISOString()}] ${line}`);
  return { log, channel };
}
