// Live sessions: somebody else's debug session (the user's debugpy session,
// any debug type in principle) followed by a DebugAdapterTracker. The tracker
// only forwards what the editor and the adapter say to the engine's
// LiveFollower (src/engine/live/follow.ts), which knows which thread is
// stopped now — where "Predict next step" can ask in a live session. Our own
// replay sessions (type 'execverify') are not followed: they have their own
// predict path through the engine server.
import * as vscode from 'vscode';
import { DEBUG_TYPE } from '../adapter/dap-protocol';
import { LiveFollower } from '../engine/live/follow';
import type { Resume } from '../engine/live/transition';

/** What the live step's caller gets of the stopped session: its requests (a LiveDap) and the stopped thread. */
export interface LiveStopped {
  session: vscode.DebugSession;
  threadId: number;
}

export interface LiveSessionEvents {
  resumed(session: vscode.DebugSession, how: Resume): void;
  stopped(session: vscode.DebugSession, threadId: number, reason: string): void;
  ended(session: vscode.DebugSession): void;
}

export interface LiveSessions {
  /** The active debug session when it is a followed live session stopped on a thread. */
  current(): LiveStopped | undefined;
  /** A followed session by id, while it runs (what the server's `execverify/dap` requests reach). */
  session(id: string): vscode.DebugSession | undefined;
  /** Subscribes to every followed session's steps (the live predict's LiveTransition listens here). */
  onEvent(listener: Partial<LiveSessionEvents>): vscode.Disposable;
}

export function registerLiveDebug(context: vscode.ExtensionContext): LiveSessions {
  const followers = new Map<string, LiveFollower>();
  const sessions = new Map<string, vscode.DebugSession>();
  const listeners = new Set<Partial<LiveSessionEvents>>();
  const each = (fn: (l: Partial<LiveSessionEvents>) => void) => {
    // A listener's failure must not reach the tracker (and the editor's message loop).
    for (const l of listeners) {
      try {
        fn(l);
      } catch {
        // ignored: the follower's state stays right whatever a listener does
      }
    }
  };

  const factory: vscode.DebugAdapterTrackerFactory = {
    createDebugAdapterTracker(session) {
      if (session.type === DEBUG_TYPE) return undefined;
      const follower = new LiveFollower({
        resumed: (how) => each((l) => l.resumed?.(session, how)),
        stopped: (threadId, reason) => each((l) => l.stopped?.(session, threadId, reason)),
        ended: () => each((l) => l.ended?.(session)),
      });
      followers.set(session.id, follower);
      sessions.set(session.id, session);
      const forget = () => {
        followers.delete(session.id);
        sessions.delete(session.id);
      };
      return {
        onWillReceiveMessage: (m: unknown) => follower.willReceive(m),
        onDidSendMessage: (m: unknown) => follower.didSend(m),
        onWillStopSession: forget,
        onExit: forget,
      };
    },
  };

  context.subscriptions.push(vscode.debug.registerDebugAdapterTrackerFactory('*', factory));
  return {
    current() {
      const session = vscode.debug.activeDebugSession;
      const stopped = session ? followers.get(session.id)?.current() : undefined;
      return session && stopped ? { session, threadId: stopped.threadId } : undefined;
    },
    session: (id) => sessions.get(id),
    onEvent(listener) {
      listeners.add(listener);
      return new vscode.Disposable(() => listeners.delete(listener));
    },
  };
}
