// Inline results in the editor: the predicted next-line marker, predicted
// values beside the line, and ✓/✗ verdicts with the real values. The server
// sends the full set per document (execverify/inline); this draws it.
import * as vscode from 'vscode';
import { InlineResultsSchema, Methods, type InlineItem } from '../server/protocol';
import type { EngineClient } from './engine-client';

export interface InlineView {
  /** The items drawn in a document now (what the self-test and the tests read). */
  itemsFor(uri: string): InlineItem[];
  /** Replaces the items of one document and redraws it where it is visible. */
  show(uri: string, items: InlineItem[]): void;
}

type Kind = 'ok' | 'bad' | 'prediction' | 'nextLine';

function kindOf(item: InlineItem): Kind {
  if (item.kind === 'predictedNext') return 'nextLine';
  // A verdict with nothing judged (a live step whose every truth is unknown) is neither ✓ nor ✗.
  if (item.kind === 'predictedValue' || item.ok === undefined) return 'prediction';
  return item.ok ? 'ok' : 'bad';
}

export function registerDecorations(context: vscode.ExtensionContext, deps: { client: EngineClient }): InlineView {
  const after = (color: string, style?: string): vscode.DecorationRenderOptions => ({
    after: { color: new vscode.ThemeColor(color), margin: '0 0 0 2em', fontStyle: style },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  const types: Record<Kind, vscode.TextEditorDecorationType> = {
    ok: vscode.window.createTextEditorDecorationType(after('testing.iconPassed')),
    bad: vscode.window.createTextEditorDecorationType(after('testing.iconFailed')),
    prediction: vscode.window.createTextEditorDecorationType(after('editorCodeLens.foreground', 'italic')),
    nextLine: vscode.window.createTextEditorDecorationType({
      ...after('editorInfo.foreground', 'italic'),
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('editor.wordHighlightBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorInfo.foreground'),
    }),
  };
  const byUri = new Map<string, InlineItem[]>();

  const draw = (editor: vscode.TextEditor) => {
    const items = byUri.get(editor.document.uri.toString()) ?? [];
    const groups: Record<Kind, vscode.DecorationOptions[]> = { ok: [], bad: [], prediction: [], nextLine: [] };
    for (const item of items) {
      if (item.line > editor.document.lineCount) continue;
      const end = editor.document.lineAt(item.line - 1).range.end;
      groups[kindOf(item)].push({
        range: new vscode.Range(end, end),
        hoverMessage: item.hover ? new vscode.MarkdownString().appendCodeblock(item.hover, 'text') : undefined,
        renderOptions: { after: { contentText: item.text } },
      });
    }
    for (const kind of Object.keys(types) as Kind[]) editor.setDecorations(types[kind], groups[kind]);
  };

  const view: InlineView = {
    itemsFor: (uri) => byUri.get(uri) ?? [],
    show(uri, items) {
      byUri.set(uri, items);
      for (const editor of vscode.window.visibleTextEditors) if (editor.document.uri.toString() === uri) draw(editor);
    },
  };

  context.subscriptions.push(
    ...Object.values(types),
    deps.client.onNotification(Methods.inline, (raw) => {
      const parsed = InlineResultsSchema.safeParse(raw);
      if (parsed.success) view.show(parsed.data.uri, parsed.data.items);
    }),
    vscode.window.onDidChangeVisibleTextEditors((editors) => editors.forEach(draw)),
    // Line numbers of results refer to the run's source; an edit makes them stale.
    vscode.workspace.onDidChangeTextDocument((e) => {
      const uri = e.document.uri.toString();
      if (e.contentChanges.length > 0 && byUri.has(uri)) view.show(uri, []);
    }),
  );
  return view;
}
