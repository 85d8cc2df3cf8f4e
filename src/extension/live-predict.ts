// The editor's half of "Predict next step" in somebody else's debug session
// (docs/live-debugging.md): the engine server does the work (reads the stop,
// asks, judges at the next stop), the extension only carries messages. It
// forwards the tracker's events to the server (execverify/liveStopped,
// liveResumed, liveEnded), answers the server's `execverify/dap` requests with
// the session's own customRequest, and keeps the `execverify.liveStopped`
// context key, which the menus and the keybinding of the replay commands
// also accept.
import * as vscode from 'vscode';
import { LiveDapParamsSchema, Methods, type LiveEnded, type LiveResumed, type LiveStopped } from '../server/protocol';
import type { EngineClient } from './engine-client';
import type { LiveSessions } from './live-debug';
import type { Log } from './log';

/** True while the active debug session is a followed live session stopped on a thread. */
export const LIVE_STOPPED_KEY = 'execverify.liveStopped';

/**
 * The DAP requests the server may send to a user's session: reading a stop
 * (`evaluate` of execverify.dap_entry in the stopped frame — the server sends
 * no other expression) and the `continue` of "Record from here". Anything else
 * (launch, setVariable, disconnect, …) is refused here, whoever asks.
 */
const ALLOWED = new Set(['threads', 'stackTrace', 'scopes', 'variables', 'evaluate', 'source', 'continue']);

/**
 * A response with every `source.path` as a path on the extension host's disk.
 * In a remote window (code-server, Remote-SSH) VS Code hands customRequest
 * the workbench's form of a source, a `vscode-remote://…` URI, where the
 * adapter said `/home/…/walk.py`; the server reads the file at that path.
 */
export function localPaths(body: unknown): unknown {
  const visit = (v: unknown, depth: number): void => {
    if (depth > 8 || typeof v !== 'object' || v === null) return;
    if (Array.isArray(v)) return v.forEach((x) => visit(x, depth + 1));
    const o = v as Record<string, unknown>;
    const source = o.source as { path?: unknown } | undefined;
    if (source && typeof source.path === 'string' && /^(?:file|vscode-remote):\/\//.test(source.path)) source.path = vscode.Uri.parse(source.path).fsPath;
    for (const x of Object.values(o)) visit(x, depth + 1);
  };
  visit(body, 0);
  return body;
}

export interface LiveBridge {
  /** The followed session stopped now in the active debug session, by id (what the live predict asks about). */
  current(): { sessionId: string; threadId: number } | undefined;
}

export function registerLiveBridge(context: vscode.ExtensionContext, deps: { client: EngineClient; live: LiveSessions; log: Log }): LiveBridge {
  const { client, live, log } = deps;
  const announced = new Set<string>();
  let shown: boolean | undefined;
  const updateContext = () => {
    const stopped = live.current() !== undefined;
    if (stopped === shown) return;
    shown = stopped;
    void vscode.commands.executeCommand('setContext', LIVE_STOPPED_KEY, stopped);
  };

  context.subscriptions.push(
    live.onEvent({
      stopped(session, threadId, reason) {
        announced.add(session.id);
        client.notify(Methods.liveStopped, { sessionId: session.id, threadId, reason, debugType: session.type } satisfies LiveStopped);
        updateContext();
      },
      resumed(session, how) {
        announced.add(session.id);
        client.notify(Methods.liveResumed, { sessionId: session.id, how } satisfies LiveResumed);
        updateContext();
      },
      ended(session) {
        if (announced.delete(session.id)) client.notify(Methods.liveEnded, { sessionId: session.id } satisfies LiveEnded);
        updateContext();
      },
    }),
    // A session stopped from the editor may end without the adapter saying `terminated`.
    vscode.debug.onDidTerminateDebugSession((session) => {
      if (announced.delete(session.id)) client.notify(Methods.liveEnded, { sessionId: session.id } satisfies LiveEnded);
      updateContext();
    }),
    vscode.debug.onDidChangeActiveDebugSession(() => updateContext()),
    client.onRequest(Methods.dap, async (raw) => {
      const p = LiveDapParamsSchema.safeParse(raw);
      if (!p.success) throw new Error('a malformed execverify/dap request');
      // The server refuses in an untrusted workspace already; this side holds to it too.
      if (!vscode.workspace.isTrusted) throw new Error('this workspace is not trusted: ExecVerify sends nothing to the debug session');
      if (!ALLOWED.has(p.data.command)) throw new Error(`ExecVerify does not send “${p.data.command}” to a debug session`);
      const session = live.session(p.data.sessionId);
      if (!session) throw new Error('the debug session has ended');
      try {
        return localPaths(await session.customRequest(p.data.command, p.data.args));
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        log(`live session ${session.name}: ${p.data.command} failed: ${message}`);
        throw new Error(`the debugger refused ${p.data.command}: ${message}`);
      }
    }),
  );
  updateContext();

  return {
    current() {
      const stopped = live.current();
      return stopped ? { sessionId: stopped.session.id, threadId: stopped.threadId } : undefined;
    },
  };
}
