// The server's view of the user's own debug sessions (debugpy, lldb, any
// adapter), followed by the editor's tracker: which thread each one is stopped
// on and where, and a LiveDap into each — every DAP request goes to the
// client as `execverify/dap` and comes back as the response's body. The work
// done at a session's stops (predict, judge, record) is queued per session, so
// the stops and resumes of one session are handled in the order they came.
import { pathToFileURL } from 'node:url';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { Connection } from 'vscode-languageserver/node';
import type { Log } from '../engine/log';
import type { LiveDap } from '../engine/live/stop';
import { Methods, type LiveDapParams, type LiveEnded, type LiveResumed, type LiveStopped } from './protocol';

export interface LiveSessionState {
  id: string;
  /** The session's debug type (debugpy, lldb, …): which reader its stops need. */
  debugType: string;
  /** The thread it is stopped on, and why; undefined while it runs. */
  stopped: { threadId: number; reason: string } | undefined;
  /** Where it is stopped (the top frame), once read: the "Predict next step" CodeLens goes there. */
  at: { uri: string; line: number } | undefined;
  /** Counts stops and resumes: a read started before a change is stale after it. */
  moves: number;
  ended: boolean;
}

/** What the sessions tell their owner (the live predict): each event, in order, after the state changed. */
export interface LiveSessionHooks {
  /** May the server send requests into the session now (a trusted workspace)? */
  trusted(): boolean;
  /** The lenses of some document may have changed. */
  lensesChanged(): void;
  stopped?(session: LiveSessionState, dap: LiveDap): Promise<void>;
  /** A stop that was over before its turn came (the session stepped on meanwhile): it can no longer be read. */
  missed?(session: LiveSessionState): Promise<void>;
  resumed?(session: LiveSessionState, how: LiveResumed['how']): Promise<void>;
  ended?(session: LiveSessionState): Promise<void>;
}

export class LiveSessions {
  private readonly sessions = new Map<string, LiveSessionState>();
  /** Per session: the tail of its queue of work. */
  private readonly queues = new Map<string, Promise<void>>();
  /** Per session: who waits for its next stop or end (nextMove). */
  private readonly moveWaiters = new Map<string, ((move: 'stopped' | 'ended') => void)[]>();
  private hooks: LiveSessionHooks;

  constructor(
    private readonly connection: Connection,
    hooks: LiveSessionHooks,
    private readonly log: Log,
  ) {
    this.hooks = hooks;
  }

  /** Adds what the owner does at each event (the live predict, "Record from here"). */
  extend(hooks: Partial<LiveSessionHooks>): void {
    this.hooks = { ...this.hooks, ...hooks };
  }

  get(sessionId: string): LiveSessionState | undefined {
    return this.sessions.get(sessionId);
  }

  /** A LiveDap into the session: requests go to the client's `execverify/dap`. */
  dap(sessionId: string): LiveDap {
    return {
      request: async <T>(command: string, args?: unknown): Promise<T> => {
        if (this.sessions.get(sessionId)?.ended !== false) throw new Error('the debug session has ended');
        const params: LiveDapParams = { sessionId, command, ...(args === undefined ? {} : { args }) };
        try {
          return (await this.connection.sendRequest(Methods.dap, params)) as T;
        } catch (e) {
          throw new Error(e instanceof Error ? e.message : String(e));
        }
      },
    };
  }

  /** Runs `work` after everything queued for the session; a failure is logged, never thrown into the queue. */
  enqueue<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(sessionId) ?? Promise.resolve()).then(work);
    const tail: Promise<void> = run.then(
      () => this.settled(sessionId, tail),
      () => this.settled(sessionId, tail),
    );
    this.queues.set(sessionId, tail);
    return run;
  }

  /** The queue of a session that has ended is dropped once its last work is done (work may still come after the end: an ask's answer). */
  private settled(sessionId: string, tail: Promise<void>): void {
    if (!this.sessions.has(sessionId) && this.queues.get(sessionId) === tail) this.queues.delete(sessionId);
  }

  /**
   * The session's next stop or end, as soon as the editor tells it — not
   * queued behind the session's work: "Record from here" waits for it inside
   * its turn of the queue, after each `continue` it sends.
   */
  nextMove(sessionId: string): Promise<'stopped' | 'ended'> {
    if (!this.sessions.has(sessionId)) return Promise.resolve('ended');
    return new Promise((resolve) => this.moveWaiters.set(sessionId, [...(this.moveWaiters.get(sessionId) ?? []), resolve]));
  }

  private moved(sessionId: string, move: 'stopped' | 'ended'): void {
    const waiting = this.moveWaiters.get(sessionId) ?? [];
    this.moveWaiters.delete(sessionId);
    for (const resolve of waiting) resolve(move);
  }

  stopped(p: LiveStopped): void {
    const s = this.sessions.get(p.sessionId) ?? this.fresh(p.sessionId, p.debugType);
    s.debugType = p.debugType;
    s.stopped = { threadId: p.threadId, reason: p.reason };
    s.at = undefined;
    s.moves += 1;
    const moves = s.moves;
    this.moved(s.id, 'stopped');
    void this.enqueue(s.id, async () => {
      if (!this.hooks.trusted()) return;
      if (s.moves !== moves) return void (await this.hooks.missed?.(s));
      if (this.hooks.stopped) await this.hooks.stopped(s, this.dap(s.id));
      if (!s.at && s.moves === moves) {
        const at = await this.topFrame(s, p.threadId);
        if (s.moves === moves) s.at = at;
      }
      this.hooks.lensesChanged();
    }).catch((e) => this.log(`live session ${s.id}: the stop could not be read: ${e instanceof Error ? e.message : String(e)}`));
  }

  resumed(p: LiveResumed): void {
    const s = this.sessions.get(p.sessionId);
    if (!s) return;
    s.stopped = undefined;
    s.at = undefined;
    s.moves += 1;
    this.hooks.lensesChanged();
    void this.enqueue(s.id, async () => this.hooks.resumed?.(s, p.how)).catch((e) =>
      this.log(`live session ${s.id}: resume: ${e instanceof Error ? e.message : String(e)}`),
    );
  }

  ended(p: LiveEnded): void {
    const s = this.sessions.get(p.sessionId);
    if (!s) return;
    s.ended = true;
    s.stopped = undefined;
    s.at = undefined;
    s.moves += 1;
    this.sessions.delete(s.id);
    this.moved(s.id, 'ended');
    this.hooks.lensesChanged();
    void this.enqueue(s.id, async () => this.hooks.ended?.(s))
      .catch((e) => this.log(`live session ${s.id}: end: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => this.queues.delete(s.id));
  }

  /** The sessions stopped in `uri`, with the line each stands on. */
  stoppedIn(uri: string): { session: LiveSessionState; line: number }[] {
    return [...this.sessions.values()].flatMap((s) => (s.stopped && s.at?.uri === uri ? [{ session: s, line: s.at.line }] : []));
  }

  private fresh(id: string, debugType: string): LiveSessionState {
    const s: LiveSessionState = { id, debugType, stopped: undefined, at: undefined, moves: 0, ended: false };
    this.sessions.set(id, s);
    return s;
  }

  /** Where the thread stands: its top frame (one `stackTrace` of one level). */
  private async topFrame(s: LiveSessionState, threadId: number): Promise<LiveSessionState['at']> {
    const { stackFrames } = await this.dap(s.id).request<DebugProtocol.StackTraceResponse['body']>('stackTrace', { threadId, startFrame: 0, levels: 1 });
    const top = stackFrames[0];
    return top?.source?.path ? { uri: pathToFileURL(top.source.path).href, line: top.line } : undefined;
  }
}
