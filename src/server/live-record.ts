// "Record from here" in the editor (docs/live-debugging.md#record-from-here):
// at a stop of the user's own debugpy session, the engine's recordFromHere
// (engine/live/record.ts) runs through the session's DAP proxy — it starts our
// sys.monitoring recorder in the stopped frame, `continue`s, and takes the
// Trace once the frame has returned. The server then adopts it as a run, and
// the editor replays it in the `execverify` debugger.
import { recordFromHere, RecordRefused } from '../engine/live/record';
import { liveAdapter } from '../engine/live/stop';
import type { Trace } from '../engine/trace/schema';
import type { LiveSessions } from './live-sessions';

export interface LiveRecordDeps {
  sessions: LiveSessions;
  /** The python-tracer directory (pythonTracerDir()): where the debuggee imports execverify.dap_entry from. */
  tracerDir: string;
}

/**
 * Records the rest of the call stopped in session `sessionId`. Each resume
 * sends `continue` and waits for the session's next stop or end as the
 * editor reports them (a breakpoint inside the call stops it: it is resumed
 * again). Throws RecordRefused with the one line the user sees: not a debugpy
 * session, Python 3.8–3.11, the session running or gone.
 */
export async function recordLive(deps: LiveRecordDeps, sessionId: string, signal: AbortSignal, report: (message: string) => void): Promise<Trace> {
  const { sessions } = deps;
  const s = sessions.get(sessionId);
  if (!s || s.ended) throw new RecordRefused('the debug session has ended');
  const adapter = liveAdapter(s.debugType);
  if (adapter !== 'debugpy') {
    throw new RecordRefused(
      `this is a “${s.debugType}” session, and the recorder runs in Python sessions under debugpy (Python 3.12+).` +
        (adapter === 'lldb' ? ' For C, record the whole program: execverify trace prog.c --entry main --via lldb.' : ''),
    );
  }
  // In the session's queue: no other read of this stop (the live predict) runs while the recorder starts.
  return sessions.enqueue(sessionId, async () => {
    const threadId = s.stopped?.threadId;
    if (threadId === undefined) throw new RecordRefused('the debug session is running: stop it at a line of the function to record, then record from there');
    const dap = sessions.dap(sessionId);
    // Cancelling stops the waiting; the recorder in the program ends with the call, its trace discarded.
    const cancelled = new Promise<never>((_, reject) => {
      const fail = () => reject(new RecordRefused('cancelled'));
      if (signal.aborted) fail();
      signal.addEventListener('abort', fail, { once: true });
    });
    cancelled.catch(() => undefined); // raced below; never an unhandled rejection when the recording ends first
    const resume = async (): Promise<boolean> => {
      const next = sessions.nextMove(sessionId);
      report('running the rest of the call');
      await Promise.race([dap.request('continue', { threadId }), cancelled]);
      return (await Promise.race([next, cancelled])) === 'ended';
    };
    report('starting the recorder in the stopped frame');
    const { trace } = await recordFromHere(dap, threadId, { tracerDir: deps.tracerDir, resume });
    return trace;
  });
}
