// What a stop of a debug adapter looks like to the engine: the call stack,
// read once per stop, and the small text conversions the DAP tracers and the
// live step share. No vscode import.
import type { DebugProtocol } from '@vscode/debugprotocol';
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
