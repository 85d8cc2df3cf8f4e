// lldb's DAP variables as our Value format (trace/schema.ts), typed as lldb
// shows them: integers and floats by their digits, chars quoted (`'a'`),
// arrays element by element, structs field by field. A pointer's value is an
// address that changes from run to run: it is recorded as the opaque repr
// `address` and never asked (questions/generate.ts `askable`).
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { Value } from '../trace/schema';

/** The fields of a DAP Variable that lldb fills. */
export interface LldbVariable {
  name: string;
  value: string;
  type?: string;
  variablesReference: number;
}

/** The repr every pointer gets: what it points to is not its value, and its address is not reproducible. */
export const ADDRESS = 'address';

/** Aggregates nested deeper than this are cut (marked truncated). */
const MAX_DEPTH = 4;

const INTEGER = /^-?\d+$/;
const FLOAT = /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i;
/** A char as lldb prints it: `'a'`, `'\n'`, `'\0'`, `'\x7f'`. */
const CHAR = /^'(?:[^'\\]|\\(?:[0-7]{1,3}|x[0-9a-fA-F]{1,2}|.))'$/;

/** Whether a C type (as lldb names it) is a pointer: `int *`, `char *`, `int (*)(int)`. */
export function isPointerType(type: string): boolean {
  return /\*\s*(?:const\s*)?$/.test(type) || /\(\*\)/.test(type);
}

/** Whether a value is a pointer or holds one (an array of pointers, a struct with a pointer field): its text holds an address. */
export function holdsPointer(v: Value): boolean {
  return isPointerType(v.type) || (v.items ?? []).some(holdsPointer) || Object.values(v.attrs ?? {}).some(holdsPointer);
}

/** One variable as a Value; `children` reads a variable's members (lldb's `variables` request). */
export async function toValue(v: LldbVariable, children: (ref: number) => Promise<LldbVariable[]>, maxItems: number, depth = 0): Promise<Value> {
  const type = (v.type ?? '').trim() || 'unknown';
  if (isPointerType(type)) return { repr: ADDRESS, type, literal: false };
  if (v.variablesReference > 0) {
    if (depth >= MAX_DEPTH) return { repr: '...', type, literal: false, truncated: true };
    const kids = await children(v.variablesReference);
    const array = /\[(\d+)\]$/.exec(type);
    if (array) {
      const len = Number(array[1]);
      const items: Value[] = [];
      for (const k of kids.slice(0, maxItems)) items.push(await toValue(k, children, maxItems, depth + 1));
      const cut = items.length < len || items.some((i) => i.truncated);
      // Python-list-shaped text: the judge compares an answer element by element.
      const repr = `[${items.map((i) => i.repr).join(', ')}${items.length < len ? ', ...' : ''}]`;
      return { repr, type, literal: !cut && items.every((i) => i.literal), len, items, ...(cut ? { truncated: true } : {}) };
    }
    const attrs: Record<string, Value> = {};
    for (const k of kids.slice(0, maxItems)) Object.defineProperty(attrs, k.name, { value: await toValue(k, children, maxItems, depth + 1), enumerable: true });
    const cut = kids.length > maxItems || Object.values(attrs).some((a) => a.truncated);
    const repr = `{${Object.entries(attrs)
      .map(([name, a]) => `.${name} = ${a.repr}`)
      .join(', ')}}`;
    return { repr, type, literal: false, attrs, ...(cut ? { truncated: true } : {}) };
  }
  const text = v.value.trim();
  return { repr: text, type, literal: INTEGER.test(text) || FLOAT.test(text) || CHAR.test(text) };
}

/** Where a local is declared, as lldb says it (1-based line and column). */
export interface Declaration {
  line: number;
  column: number;
}

/**
 * The declaration of each local, from lldb's `frame variable
 * --show-declaration` (`loop.c:15:7: (int) total = 0`): before its
 * declaration has run a C local holds whatever bytes its stack slot had.
 */
export function declarationLines(text: string): Map<string, Declaration> {
  const out = new Map<string, Declaration>();
  for (const m of text.matchAll(/^[^\n]*?:(\d+):(\d+): \(.*?\) ([A-Za-z_]\w*) = /gm)) {
    if (!out.has(m[3]!)) out.set(m[3]!, { line: Number(m[1]), column: Number(m[2]) });
  }
  return out;
}

/**
 * Whether a local declared at `decl` has been initialised at a stop at
 * (`line`, `column`): its declaration lies before the stop. On the line of
 * the declaration the column tells the two stops of a `for (int i = 0; …;
 * i++)` line apart: the first, at `int i` (the declaration's own column), is
 * before it runs; later ones, at `i++` or the test, are after. An adapter that
 * gives no column (0) never has a local on its declaration's line.
 */
export function declaredBefore(decl: Declaration | undefined, line: number, column: number): boolean {
  return decl !== undefined && (decl.line < line || (decl.line === line && column > decl.column));
}

/** What reading a frame needs of a debug session: requests (a DapClient, or vscode's `session.customRequest`). */
export interface LldbRequests {
  request<T = unknown>(command: string, args?: unknown): Promise<T>;
}

/**
 * The locals lldb lists for frame `frameId` (its `Locals` scope) that
 * `wanted` keeps, as Values. `declared` caches each local's declaration: it
 * is read (one `frame variable --show-declaration`) only when lldb lists a
 * local it lacks; a local whose declaration lldb does not say gets none.
 */
export async function readLldbLocals(
  dap: LldbRequests,
  frameId: number,
  declared: Map<string, Declaration>,
  wanted: (name: string, decl: Declaration | undefined) => boolean,
  maxItems: number,
): Promise<Record<string, Value>> {
  const { scopes } = await dap.request<DebugProtocol.ScopesResponse['body']>('scopes', { frameId });
  const scope = scopes.find((s) => s.name === 'Locals') ?? scopes[0];
  if (!scope) return {};
  const { variables } = await dap.request<DebugProtocol.VariablesResponse['body']>('variables', { variablesReference: scope.variablesReference });
  if (variables.some((v) => !declared.has(v.name))) {
    const r = await dap.request<DebugProtocol.EvaluateResponse['body']>('evaluate', {
      expression: '`frame variable --show-declaration',
      frameId,
      context: 'repl',
    });
    for (const [name, decl] of declarationLines(r.result)) declared.set(name, decl);
  }
  const children = (ref: number) =>
    dap.request<DebugProtocol.VariablesResponse['body']>('variables', { variablesReference: ref }).then((b) => b.variables as LldbVariable[]);
  const now: Record<string, Value> = {};
  for (const v of variables) {
    if (!wanted(v.name, declared.get(v.name))) continue;
    // defineProperty: a local named __proto__ is a local like any other.
    Object.defineProperty(now, v.name, { value: await toValue(v as LldbVariable, children, maxItems), enumerable: true });
  }
  return now;
}
