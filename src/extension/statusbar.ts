// The status bar item: the model endpoint's health (or that the baseline
// answers), and the rewards of the last whole-call verification.
import * as vscode from 'vscode';
import { HealthSchema, Methods, type Health, type Verification } from '../server/protocol';
import type { EngineClient } from './engine-client';
import type { Log } from './log';

export interface StatusBarView {
  refresh(): Promise<Health | undefined>;
  showRewards(v: Verification): void;
  /** The item's current text (the self-test and the tests read it). */
  text(): string;
}

export function healthText(h: Health): { text: string; tooltip: string } {
  switch (h.state) {
    case 'baseline':
      return { text: '$(beaker) ExecVerify: baseline', tooltip: `No model endpoint: the trivial baseline answers. ${h.message}` };
    case 'ok':
      return { text: `$(beaker) ExecVerify: ${h.model || 'model'}`, tooltip: `${h.endpoint} is up. ${h.message}` };
    case 'down':
      return { text: '$(warning) ExecVerify: endpoint down', tooltip: `${h.endpoint}: ${h.message}` };
    case 'untrusted':
      return { text: '$(shield) ExecVerify: restricted', tooltip: `${h.message} Trust the workspace to predict and verify.` };
  }
}

export function rewardsText(v: Verification): string {
  const r = v.rewards;
  const who = v.answerer.kind === 'baseline' ? ' (baseline)' : '';
  return `$(beaker) R ${r.r.toFixed(2)} · IO ${r.rIO.toFixed(0)} · white ${r.rWhite.toFixed(2)}${who}`;
}

export function registerStatusBar(context: vscode.ExtensionContext, deps: { client: EngineClient; log: Log }): StatusBarView {
  const item = vscode.window.createStatusBarItem('execverify.status', vscode.StatusBarAlignment.Left, 10);
  item.name = 'ExecVerify';
  item.text = '$(beaker) ExecVerify';
  item.command = 'execverify.checkEndpoint';
  item.show();
  let last: Health | undefined;

  const view: StatusBarView = {
    async refresh() {
      try {
        last = await deps.client.request(Methods.health, {}, HealthSchema);
        const { text, tooltip } = healthText(last);
        item.text = text;
        item.tooltip = tooltip;
        item.backgroundColor = last.state === 'down' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
        return last;
      } catch (e) {
        item.text = '$(warning) ExecVerify';
        item.tooltip = `Could not check the endpoint: ${e instanceof Error ? e.message : String(e)}`;
        return undefined;
      }
    },
    showRewards(v) {
      item.text = rewardsText(v);
      item.tooltip = `Last “Verify whole call”: R_IO ${v.rewards.rIO}, R_white ${v.rewards.rWhite.toFixed(3)}, R ${v.rewards.r.toFixed(3)} (α ${v.rewards.alpha}${v.rewards.gated ? ', gated' : ''}). Click to check the endpoint.`;
    },
    text: () => item.text,
  };

  context.subscriptions.push(
    item,
    vscode.commands.registerCommand('execverify.checkEndpoint', async () => {
      const h = await view.refresh();
      if (!h) return;
      const say = h.state === 'down' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
      const choice = await say(`ExecVerify: ${healthText(h).tooltip}`, 'Open Settings', 'Set API Key');
      if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'execverify');
      if (choice === 'Set API Key') await vscode.commands.executeCommand('execverify.setApiKey');
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('execverify')) setTimeout(() => void view.refresh(), 300);
    }),
  );
  void view.refresh();
  return view;
}
