// What a stop of a debug adapter looks like to the engine: the call stack,
// read once per stop, the locals diff and the process-group stop the DAP
// tracers share, and the small text conversions the DAP tracers and the
// live step share. No vscode import.
import type { ChildProcess } from 'node:child_process';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { Value } from '../trace/schema';
import type { DapClient } from './client';

/** One frame of a stop, as the adapter reports it. */
export interface DapFrameView {
  id: number;
  name: string;
  /** The frame's source path, when it has one on disk. */
  path: string | undefined;
  line: number;
}

export interface StopView {
  threadId: number;
  /** Innermost first, as in DAP. */
  frames: DapFrameView[];
}

/** The whole stack of `threadId` at the current stop. */
export async function readStop(dap: Pick<DapClient, 'request'>, threadId: number): Promise<StopView> {
  const { stackFrames } = await dap.request<DebugProtocol.StackTraceResponse['body']>('stackTrace', { threadId, startFrame: 0, levels: 0 });
  return { threadId, frames: stackFrames.map((f) => ({ id: f.id, name: f.name, path: f.source?.path, line: f.line })) };
}

/**
 * The string a Python `repr` of an ASCII string stands for. debugpy answers
 * an `evaluate` of a str with its repr; the texts we evaluate are ASCII JSON
 * (execverify.dap_entry), so only quotes, backslashes and \xNN are escaped.
 */
export function decodePyRepr(repr: string): string {
  const q = repr[0];
  if ((q !== "'" && q !== '"') || repr[repr.length - 1] !== q) throw new Error(`not a Python string repr: ${repr.slice(0, 80)}`);
  return repr.slice(1, -1).replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, c: string) => (c.length === 3 ? String.fromCharCode(parseInt(c.slice(1), 16)) : c));
}

/**
 * Ends the adapter and whatever it started (debugpy's launcher, the
 * debuggee): they share the process group the adapter leads, so one signal
 * to the group leaves nothing behind, even a launcher that would linger.
 */
export async function stopProcessGroup(child: ChildProcess): Promise<void> {
  const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL'); // the group is gone already, or this platform has none
  }
  await exited;
}

/** Updates `known` to `now` and returns what changed, as a step's `set` / `del`. */
export function diff(known: Map<string, string>, now: Record<string, Value>): { set?: Record<string, Value>; del?: string[] } {
  const set: Record<string, Value> = {};
  const del: string[] = [];
  for (const [name, v] of Object.entries(now)) {
    const text = JSON.stringify(v);
    if (known.get(name) !== text) {
      // defineProperty: a local named __proto__ is a name like any other.
      Object.defineProperty(set, name, { value: v, enumerable: true, writable: true, configurable: true });
      known.set(name, text);
    }
  }
  for (const name of [...known.keys()]) {
    if (!(name in now)) {
      del.push(name);
      known.delete(name);
    }
  }
  return { ...(Object.keys(set).length ? { set } : {}), ...(del.length ? { del } : {}) };
}
