// "Record from here" (issue #19 item 3): at a stop of somebody else's debugpy
// session on Python 3.12+, our sys.monitoring recorder is started in the
// stopped frame on a tool id of its own (debugpy holds DEBUGGER_ID), records
// the rest of that call, and the Trace is handed back for the replay debugger.
// On 3.8–3.11 there is one settrace slot and debugpy owns it: refused, saying so.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapClient } from '../dap/client';
import { decodePyRepr, readStop } from '../dap/stops';
import type { Trace } from '../trace/schema';
import { parseTrace } from '../trace/validate';
import type { LiveDap } from './stop';

/** A session's requests, and its events where it has them (a DapClient; the editor passes `resume` instead). */
export type RecordDap = LiveDap & Partial<Pick<DapClient, 'waitFor'>>;

/** Why a recording could not be made (refused on 3.8–3.11, or the recorder's own error): one line for the user. */
export class RecordRefused extends Error {}

export interface RecordOptions {
  /** The python-tracer directory (pythonTracerDir()): where the debuggee imports execverify.dap_entry from. */
  tracerDir: string;
  maxSteps?: number;
  reprChars?: number;
  containerItems?: number;
  /**
   * Resumes the session once; the default sends `continue` and waits for the
   * next `stopped` or `terminated`. Resolves true when the session ended. It is
   * called again at every stop that comes before the frame has returned.
   */
  resume?: () => Promise<boolean>;
}

/** Where the recording starts: the stopped frame's line. */
export interface RecordStart {
  line: number;
  /** The sys.monitoring tool id the recorder holds. */
  tool: number;
}

/**
 * Starts the recorder in the top frame of `threadId`'s stop, resumes (see
 * RecordOptions.resume), and returns the frame's Trace from its current line
 * and locals to its return, valid under TraceSchema. Throws RecordRefused
 * with the reason where recording is not possible.
 */
export async function recordFromHere(dap: RecordDap, threadId: number, options: RecordOptions): Promise<{ start: RecordStart; trace: Trace }> {
  const view = await readStop(dap, threadId);
  const top = view.frames[0];
  if (!top) throw new RecordRefused('the thread has no stopped frame');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'execverify-record-'));
  const out = path.join(dir, 'trace.json');
  try {
    const call = `record_from_here(${JSON.stringify(out)}, ${options.maxSteps ?? 100_000}, ${options.reprChars ?? 1000}, ${options.containerItems ?? 32})`;
    // sys.path is put back at once; sys.modules keeps `execverify` (as readLiveStop does).
    const expression =
      `(lambda s, p: (s.path.insert(0, p), __import__('execverify.dap_entry', fromlist=['record_from_here']), s.path.remove(p))[1])` +
      `(__import__('sys'), ${JSON.stringify(options.tracerDir)}).${call}`;
    // Not debugpy, not Python, or execverify not importable there: said as the adapter says it.
    const r = await dap
      .request<DebugProtocol.EvaluateResponse['body']>('evaluate', { expression, frameId: top.id, context: 'clipboard' })
      .catch((e: unknown) => {
        throw new RecordRefused(`the debugger could not start the recorder: ${e instanceof Error ? e.message : String(e)}`);
      });
    let started: { recording: number; tool: number } | { refused: string } | { error: string };
    try {
      started = JSON.parse(decodePyRepr(r.result)) as typeof started;
    } catch {
      throw new RecordRefused(`the debugger could not start the recorder: ${r.result.slice(0, 300)}`);
    }
    if ('refused' in started) throw new RecordRefused(started.refused);
    if ('error' in started) throw new RecordRefused(started.error);
    const resume = options.resume ?? (() => resumeUntilStopOrEnd(dap, threadId));
    // A breakpoint (or a step) inside the call stops it before it returns: resumed again, it records on.
    let ended = false;
    while (!existsSync(out) && !ended) ended = await resume();
    if (!existsSync(out)) throw new RecordRefused('the session ended before the recorded frame returned');
    const text = readFileSync(out, 'utf8');
    const got = JSON.parse(text) as { error?: string };
    if (typeof got.error === 'string') throw new RecordRefused(got.error);
    return { start: { line: started.recording, tool: started.tool }, trace: parseTrace(got) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `continue`, then the next `stopped` or `terminated`, whichever comes first. */
async function resumeUntilStopOrEnd(dap: RecordDap, threadId: number): Promise<boolean> {
  if (!dap.waitFor) throw new RecordRefused('this session cannot be resumed from here: pass RecordOptions.resume');
  const next = Promise.race([dap.waitFor('stopped').then(() => false), dap.waitFor('terminated').then(() => true)]);
  await dap.request('continue', { threadId });
  return next;
}
