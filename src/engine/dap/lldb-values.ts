// lldb's DAP variables as our Value format (trace/schema.ts), typed as lldb
// shows them: integers and floats by their digits, chars quoted (`'a'`),
// arrays element by element, structs field by field. A pointer's value is an
// address that changes from run to run: it is recorded as the opaque repr
// `address` and never asked (questions/generate.ts `askable`).
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

/**
 * The declaration line of each local, from lldb's `frame variable
 * --show-declaration` (`loop.c:15:7: (int) total = 0`): before its
 * declaration has run a C local holds whatever bytes its stack slot had.
 */
export function declarationLines(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^[^\n]*?:(\d+):\d+: \(.*?\) ([A-Za-z_]\w*) = /gm)) {
    if (!out.has(m[2]!)) out.set(m[2]!, Number(m[1]));
  }
  return out;
}
