// One stop of somebody else's debug session (the user's debugpy session, a C
// program under lldb's DAP server, any adapter in principle), read for
// "Predict next step": where it stopped and the stopped frame's locals,
// exactly where the adapter lets us. No vscode import: the editor's tracker
// hands its session in as a LiveDap.
import { readFileSync } from 'node:fs';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { definitionLine } from '../dap/lldb-tracer';
import { declaredBefore, readLldbLocals, type Declaration } from '../dap/lldb-values';
import { decodePyRepr, readStop, type DapFrameView } from '../dap/stops';
import { findFunctions } from '../python-functions';
import type { Value } from '../trace/schema';

/** What the live step needs of a debug session: requests (a DapClient, or vscode's `session.customRequest`). */
export interface LiveDap {
  request<T = unknown>(command: string, args?: unknown): Promise<T>;
}

/**
 * How a session's stops are read: `debugpy` exactly through
 * execverify.dap_entry; `lldb` (lldb's own DAP server) as the lldb tracer
 * reads them, typed, the program being C; `other`: the values it shows, none exact.
 */
export type LiveAdapter = 'debugpy' | 'lldb' | 'other';

/**
 * The reader for a VS Code debug type. lldb's DAP server is `lldb-dap`
 * (LLVM's extension; `lldb-vscode` before it was renamed). CodeLLDB's `lldb`
 * is another adapter (codelldb) whose value text has not been checked against
 * the judge's C rules, so it stays `other`: a value read wrongly would give a
 * wrong ✓/✗, a value not read gives "unknown".
 */
export function liveAdapter(debugType: string): LiveAdapter {
  if (debugType === 'debugpy' || debugType === 'python') return 'debugpy';
  return debugType === 'lldb-dap' || debugType === 'lldb-vscode' ? 'lldb' : 'other';
}

export interface LiveStop {
  adapter: LiveAdapter;
  threadId: number;
  /** The whole stack, innermost first (frame ids are how the asked frame is found again). */
  frames: DapFrameView[];
  /** The stopped (top) frame. */
  path: string;
  line: number;
  /** The file's text as it runs. */
  source: string;
  /** Qualified name of the stopped function, and the line of its `def` (0: module level). */
  fn: string;
  first: number;
  locals: Record<string, Value>;
  /** Values returned into the frame since its last stop (debugpy's showReturnValue), by debugpy's name. */
  returns: Record<string, Value>;
  /** At debugpy's return stop (in the caller, on the line of the call): the returning callee's locals. */
  callee?: Record<string, Value>;
  /** true: read exactly (debugpy: execverify.dap_entry.exact; lldb: typed, lldb-values.ts); false: the adapter's shown values, every one unknown. */
  exact: boolean;
}

export interface ReadOptions {
  /** The session's reader (liveAdapter of its debug type); absent: debugpy's. */
  adapter?: LiveAdapter;
  /** The python-tracer directory (pythonTracerDir()): where a debugpy debuggee imports execverify.dap_entry from. */
  tracerDir: string;
  reprChars?: number;
  containerItems?: number;
  /** The file's text when the caller has it (an editor buffer); else it is read from disk. */
  source?: string;
}

/** A value the adapter showed but we could not read exactly: never asked about, never judged. */
export function shownValue(v: DebugProtocol.Variable): Value {
  return { repr: v.value, type: v.type ?? 'unknown', literal: false, truncated: true };
}

/**
 * Reads the stop of `threadId`. debugpy: values come from one `evaluate` (context
 * `clipboard`, which debugpy does not cut) of execverify.dap_entry.exact in
 * the stopped frame — the in-process tracer's encoder, as the DAP tracer
 * reads them. The debuggee imports the package from `tracerDir` (sys.path is
 * put back; sys.modules keeps `execverify`). Where that evaluate fails (not
 * debugpy, not Python, a frame without it), the adapter's `variables` are
 * taken as shown and marked inexact.
 */
export async function readLiveStop(dap: LiveDap, threadId: number, options: ReadOptions): Promise<LiveStop> {
  const view = await readStop(dap, threadId);
  const top = view.frames[0];
  if (!top?.path) throw new Error('the stopped frame has no source file on disk');
  const source = options.source ?? readFileSync(top.path, 'utf8');
  const adapter = options.adapter ?? 'debugpy';
  const base = { adapter, threadId, frames: view.frames, path: top.path, line: top.line, source };
  if (adapter === 'lldb') {
    const c = { ...base, fn: top.name, first: definitionLine(source.split('\n'), top.name, top.line), returns: {} };
    try {
      return { ...c, locals: await lldbLocals(dap, top, options.containerItems ?? 32), exact: true };
    } catch {
      return { ...c, locals: await shownValues(dap, top), exact: false }; // no declarations: which locals hold garbage is unknown
    }
  }
  if (adapter === 'other') return { ...base, ...(await shownLocals(dap, top, source)), returns: {}, exact: false };
  const expression =
    `(lambda s, p: (s.path.insert(0, p), __import__('execverify.dap_entry', fromlist=['exact']), s.path.remove(p))[1])` +
    `(__import__('sys'), ${JSON.stringify(options.tracerDir)}).exact(${options.reprChars ?? 1000}, ${options.containerItems ?? 32})`;
  try {
    const r = await dap.request<DebugProtocol.EvaluateResponse['body']>('evaluate', { expression, frameId: top.id, context: 'clipboard' });
    const got = JSON.parse(decodePyRepr(r.result)) as
      { locals: Record<string, Value>; returns: Record<string, Value>; callee?: Record<string, Value>; fn: string; first: number } | { error: string };
    if ('error' in got) throw new Error(got.error);
    return { ...base, fn: got.fn, first: got.first, locals: got.locals, returns: got.returns, ...(got.callee ? { callee: got.callee } : {}), exact: true };
  } catch {
    return { ...base, ...(await shownLocals(dap, top, source)), returns: {}, exact: false };
  }
}

/**
 * The stopped C frame's locals as the lldb tracer reads them (lldb-values.ts):
 * typed, pointers as `address`, and only those whose declaration lies before
 * the stop — one stop holds all it takes (declaredBefore), so a live stop
 * needs no history of the session.
 */
function lldbLocals(dap: LiveDap, top: DapFrameView, containerItems: number): Promise<Record<string, Value>> {
  const live = (_name: string, decl: Declaration | undefined) => declaredBefore(decl, top.line, top.column);
  return readLldbLocals(dap, top.id, new Map(), live, containerItems);
}

/** The adapter's own view of the frame: its first non-expensive scope's variables, each marked inexact. */
async function shownValues(dap: LiveDap, top: DapFrameView): Promise<Record<string, Value>> {
  const { scopes } = await dap.request<DebugProtocol.ScopesResponse['body']>('scopes', { frameId: top.id });
  const scope = scopes.find((s) => !s.expensive);
  const locals: Record<string, Value> = {};
  if (scope) {
    const { variables } = await dap.request<DebugProtocol.VariablesResponse['body']>('variables', { variablesReference: scope.variablesReference });
    for (const v of variables) if (/^[A-Za-z_]\w*$/.test(v.name)) locals[v.name] = shownValue(v);
  }
  return locals;
}

/** A Python frame as the adapter shows it: its values inexact, its `def` from the source. */
async function shownLocals(dap: LiveDap, top: DapFrameView, source: string): Promise<{ fn: string; first: number; locals: Record<string, Value> }> {
  const locals = await shownValues(dap, top);
  // The innermost `def` at or above the line: where the frame's body starts.
  const def = findFunctions(source)
    .filter((f) => f.line <= top.line)
    .at(-1);
  return { fn: top.name, first: def?.line ?? 0, locals };
}

/**
 * Where the asked stop's frame is in `stop`'s stack: its index (0: stopped
 * in it again), or -1 once it has returned. debugpy keeps a frame's id while
 * the frame lives. lldb's frame ids are stack positions (the top frame is
 * always the same id), so there the frame is the one at the asked frame's
 * depth from the outermost, under the same callers stopped on the same lines.
 */
export function findFrame(stop: LiveStop, asked: LiveStop): number {
  const top = asked.frames[0]!;
  if (asked.adapter !== 'lldb') return stop.frames.findIndex((f) => f.id === top.id && f.name === top.name);
  const at = stop.frames.length - asked.frames.length;
  if (at < 0 || stop.frames[at]!.name !== top.name) return -1;
  const callers = asked.frames.slice(1).every((f, k) => stop.frames[at + 1 + k]!.name === f.name && stop.frames[at + 1 + k]!.line === f.line);
  return callers ? at : -1;
}
