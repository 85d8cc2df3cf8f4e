// What a stop of a debug adapter looks like to the engine: the call stack,
// read once per stop, the locals diff, the adapter connection, the program's
// output and the process-group stop the DAP tracers share, and the small text
// conversions the DAP tracers and the live step share. No vscode import.
import type { ChildProcess } from 'node:child_process';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { Value } from '../trace/schema';
import { DapClient } from './client';

/** One frame of a stop, as the adapter reports it. */
export interface DapFrameView {
  id: number;
  name: string;
  /** The frame's source path, when it has one on disk. */
  path: string | undefined;
  line: number;
  /** 1-based; 0 where the adapter gives none. */
  column: number;
}

export interface StopView {
  threadId: number;
  /** Innermost first, as in DAP. */
  frames: DapFrameView[];
}

/** The whole stack of `threadId` at the current stop. */
export async function readStop(dap: Pick<DapClient, 'request'>, threadId: number): Promise<StopView> {
  const { stackFrames } = await dap.request<DebugProtocol.StackTraceResponse['body']>('stackTrace', { threadId, startFrame: 0, levels: 0 });
  return { threadId, frames: stackFrames.map((f) => ({ id: f.id, name: f.name, path: f.source?.path, line: f.line, column: f.column ?? 0 })) };
}

/**
 * A DapClient over a spawned adapter's pipes. The adapter's exit or a failed
 * spawn fails every pending request, saying the end of what the adapter wrote
 * to stderr (`stderrTail()`, kept for a tracer's own errors too).
 */
export function connectAdapter(adapter: ChildProcess): { dap: DapClient; stderrTail: () => string } {
  let tail = '';
  adapter.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString('utf8')).slice(-4000)));
  const dap = new DapClient(adapter.stdout!, adapter.stdin!);
  adapter.on('exit', () => dap.fail(new Error(`the debug adapter exited${tail ? `: ${tail.trim()}` : ''}`)));
  adapter.on('error', (err) => dap.fail(err));
  return { dap, stderrTail: () => tail };
}

/** The program's stdout and stderr so far, and whether either was cut. */
export interface ProgramOutput {
  stdout: string;
  stderr: string;
  stdoutCut: boolean;
  stderrCut: boolean;
}

/**
 * Collects the program's stdout and stderr from the adapter's output events,
 * the two together cut at `outputBytes`; `clean` rewrites each piece kept.
 */
export function collectOutput(dap: DapClient, outputBytes: number, clean: (text: string) => string = (text) => text): ProgramOutput {
  const out: ProgramOutput = { stdout: '', stderr: '', stdoutCut: false, stderrCut: false };
  dap.on('output', (e: DebugProtocol.OutputEvent) => {
    const cat = e.body.category;
    if (cat !== 'stdout' && cat !== 'stderr') return;
    const room = outputBytes - out.stdout.length - out.stderr.length;
    const text = e.body.output.slice(0, Math.max(0, room));
    if (text.length < e.body.output.length) out[cat === 'stdout' ? 'stdoutCut' : 'stderrCut'] = true;
    out[cat] += clean(text);
  });
  return out;
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
