// The trace-vs-prediction panel: a webview running the static app in media/
// (strict CSP with a nonce, assets through asWebviewUri, only media/ readable),
// fed with PanelData from the engine server, restored after a reload.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { z } from 'zod';
import { Methods, PanelDataWireSchema, RunChangedSchema, type PanelData } from '../server/protocol';
import type { EngineClient } from './engine-client';
import type { Log } from './log';

export const PANEL_VIEW_TYPE = 'execverify.panel';

/** Messages the webview may send; anything else is ignored. */
export const WebviewMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), runId: z.string().nullable() }),
  z.object({ type: z.literal('selectStep'), step: z.number().int().nonnegative() }),
  z.object({ type: z.literal('addSample') }),
  z.object({ type: z.literal('export') }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessageSchema>;

export interface PanelHost {
  /** Opens (or reveals) the panel on a run and loads its rows. */
  show(runId: string): Promise<void>;
  /** Reloads the current run's rows (after a prediction, a verdict or a verification). */
  refresh(runId?: string): Promise<void>;
  /** The debugger moved: select the row. */
  selectStep(runId: string, step: number): void;
  currentRunId(): string | undefined;
  /** The user selected a row: the debugger follows. */
  readonly onDidSelectStep: vscode.Event<{ runId: string; step: number }>;
  /** The last data sent to the webview (the self-test reads it). */
  lastData(): PanelData | undefined;
}

export function nonce(): string {
  return randomBytes(16).toString('base64').replace(/[+/=]/g, '');
}

export function panelHtml(webview: vscode.Webview, extensionUri: vscode.Uri, scriptNonce: string): string {
  const media = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', file)).toString();
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `script-src 'nonce-${scriptNonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${media('panel.css')}">
<title>ExecVerify: trace vs prediction</title>
</head>
<body>
<header>
  <div id="summary"></div>
  <div class="toolbar">
    <button id="add" title="Add this run (and its verification) to the workspace's sample store">Add to dataset</button>
    <button id="export" title="Export the sample store for a trainer">Export…</button>
    <span class="muted">↑/↓ PgUp/PgDn Home/End move · n / N next/previous mismatch · Enter moves the debugger</span>
  </div>
</header>
<div id="empty" class="muted">No run yet: trace a function with the “Trace…” CodeLens.</div>
<div id="list" tabindex="0" role="listbox" aria-label="Steps of the run">
  <div id="spacer"></div>
  <div id="window"></div>
</div>
<script nonce="${scriptNonce}" src="${media('panel-model.js')}"></script>
<script nonce="${scriptNonce}" src="${media('panel.js')}"></script>
</body>
</html>`;
}

export function registerPanel(context: vscode.ExtensionContext, deps: { client: EngineClient; log: Log }): PanelHost {
  let panel: vscode.WebviewPanel | undefined;
  let runId: string | undefined;
  let data: PanelData | undefined;
  const selected = new vscode.EventEmitter<{ runId: string; step: number }>();

  const post = (message: unknown) => void panel?.webview.postMessage(message);

  const load = async (id: string) => {
    runId = id;
    try {
      data = await deps.client.request(Methods.panel, { runId: id }, PanelDataWireSchema);
      post({ type: 'data', data });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      deps.log(`panel: ${message}`);
      void vscode.window.showWarningMessage(`ExecVerify panel: ${message}`);
    }
  };

  const attach = (p: vscode.WebviewPanel) => {
    panel = p;
    p.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, 'media')] };
    p.webview.html = panelHtml(p.webview, context.extensionUri, nonce());
    p.onDidDispose(() => {
      if (panel === p) panel = undefined;
    });
    p.webview.onDidReceiveMessage((raw: unknown) => {
      const parsed = WebviewMessageSchema.safeParse(raw);
      if (!parsed.success) return deps.log('panel: ignored a malformed message from the webview');
      const msg = parsed.data;
      if (msg.type === 'ready') {
        const id = runId ?? msg.runId ?? undefined;
        if (id) void load(id);
      } else if (msg.type === 'selectStep' && runId) {
        selected.fire({ runId, step: msg.step });
      } else if (msg.type === 'addSample') {
        void vscode.commands.executeCommand('execverify.addSample', runId);
      } else if (msg.type === 'export') {
        void vscode.commands.executeCommand('execverify.export');
      }
    });
  };

  context.subscriptions.push(
    selected,
    // Predictions, verdicts and verifications arrive for runs; reload only the run on show.
    deps.client.onNotification(Methods.runChanged, (raw) => {
      const p = RunChangedSchema.safeParse(raw);
      if (p.success && panel && p.data.runId === runId) void load(runId);
    }),
    vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPE, {
      async deserializeWebviewPanel(p: vscode.WebviewPanel, state: unknown) {
        const saved = z.object({ runId: z.string().nullable() }).safeParse(state);
        runId = saved.success ? (saved.data.runId ?? undefined) : undefined;
        attach(p);
      },
    }),
  );

  return {
    async show(id) {
      if (!panel) {
        attach(
          vscode.window.createWebviewPanel(
            PANEL_VIEW_TYPE,
            'ExecVerify: trace vs prediction',
            { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
            { retainContextWhenHidden: false },
          ),
        );
      } else {
        panel.reveal(undefined, true);
      }
      await load(id);
    },
    async refresh(id) {
      if (panel && runId && (id === undefined || id === runId)) await load(runId);
    },
    selectStep(id, step) {
      if (panel && id === runId) post({ type: 'selectStep', step });
    },
    currentRunId: () => runId,
    onDidSelectStep: selected.event,
    lastData: () => data,
  };
}
