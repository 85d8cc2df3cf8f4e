// "ExecVerify: Open Evaluation Report": an `execverify eval` report.html in a
// webview. The page is self-contained (its charts' libraries are inlined), so
// the webview loads nothing: a CSP with a nonce on the page's own scripts
// (and 'unsafe-eval', which Vega's expression code needs), no remote source.
// A replay link posts its trace's path; only a file under the report's own
// traces/ folder starts the replay debugger.
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { z } from 'zod';
import { DEBUG_TYPE } from '../adapter/dap-protocol';
import type { Log } from './log';

export const REPORT_VIEW_TYPE = 'execverify.report';
export const OPEN_REPORT_COMMAND = 'execverify.openReport';

/** The one message a report page sends. */
export const ReportMessageSchema = z.object({ type: z.literal('replay'), trace: z.string().max(512), line: z.number().int().nonnegative().optional() });

/** The report page with a CSP that lets only its own scripts run. */
export function reportHtml(html: string, nonce: string, cspSource: string): string {
  const csp = `default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline'; font-src data:; ` + `script-src 'nonce-${nonce}' 'unsafe-eval';`;
  const withNonce = html.replace(/<script\b/gi, `<script nonce="${nonce}"`);
  return withNonce.replace(/<head>/i, `<head><meta http-equiv="Content-Security-Policy" content="${csp}">`);
}

/** The trace a replay link names, if it is a file in the report's traces/ folder. */
export async function reportTrace(reportDir: string, requested: string): Promise<string | undefined> {
  const traces = path.resolve(reportDir, 'traces');
  const file = path.resolve(reportDir, requested);
  if (path.dirname(file) !== traces || !file.endsWith('.json')) return undefined;
  try {
    return (await stat(file)).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

export function registerReportViewer(context: vscode.ExtensionContext, deps: { log: Log }): void {
  context.subscriptions.push(
    vscode.commands.registerCommand(OPEN_REPORT_COMMAND, async (uri?: vscode.Uri) => {
      const target =
        uri ?? (await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Open Report', filters: { 'Evaluation report': ['html'] } }))?.[0];
      if (!target) return;
      let html: string;
      try {
        html = await readFile(target.fsPath, 'utf8');
      } catch (err) {
        void vscode.window.showErrorMessage(`Cannot read the report ${target.fsPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        return;
      }
      const dir = path.dirname(target.fsPath);
      const panel = vscode.window.createWebviewPanel(REPORT_VIEW_TYPE, `Report: ${path.basename(dir)}`, vscode.ViewColumn.Active, {
        enableScripts: true,
        localResourceRoots: [],
      });
      panel.webview.html = reportHtml(html, randomBytes(16).toString('base64'), panel.webview.cspSource);
      panel.webview.onDidReceiveMessage(async (raw: unknown) => {
        const msg = ReportMessageSchema.safeParse(raw);
        if (!msg.success) return;
        const trace = await reportTrace(dir, msg.data.trace);
        if (!trace) {
          deps.log(`report: ignored a replay link outside ${path.join(dir, 'traces')}: ${msg.data.trace}`);
          return;
        }
        await vscode.debug.startDebugging(undefined, { type: DEBUG_TYPE, request: 'launch', name: `Replay ${path.basename(trace)}`, traceFile: trace });
      });
    }),
  );
}
