// REval's ground truth, read from our trace: its tracer keeps one "state" per
// run of consecutive events on the same line (any frame of the program's
// file), and every probe is answered from that flat sequence — coverage (the
// line ran), path (the lines of the states right after it, -1 after the last)
// and state (the variable, attribute or item in the locals of the state right
// after each run). Written from REval's dynamics.py rules, not its code.
import type { DecodedTrace } from '../trace/decode';
import type { Trace, Value } from '../trace/schema';

/** One REval state: a line, and the step whose locals it holds (its last `line` event; -1 when it has none). */
export interface RevalState {
  line: number;
  localsStep: number;
}

/**
 * A probe's truth: what REval's harness computes. `defined`: the run finished,
 * every value was read whole, and each is a plain literal, so REval's reading
 * of an answer (an eval) and ours (a literal) agree on it.
 */
export interface ProbeTruth {
  covered: boolean;
  next: number[];
  /** null: REval's Nil (the line never ran, or the variable is in no state after it). */
  values: Value[] | null;
  defined: boolean;
  /** Why the probe is not well defined, when it is not. */
  why?: string;
}

/**
 * The flat state sequence from `from` on: events of file 0 up to line
 * `maxLine` (the class code, without the test driver appended to it); call
 * events do not make states (REval's tracer ignores them).
 */
export function revalStates(d: DecodedTrace, from = 0, maxLine = Number.MAX_SAFE_INTEGER): RevalState[] {
  const out: RevalState[] = [];
  for (let i = from; i < d.steps.length; i++) {
    const s = d.steps[i]!;
    if (s.file !== 0 || s.line > maxLine || s.line < 1 || s.event === 'call') continue;
    const last = out[out.length - 1];
    if (last && last.line === s.line) {
      if (s.event === 'line') last.localsStep = i;
      continue;
    }
    out.push({ line: s.line, localsStep: s.event === 'line' ? i : -1 });
  }
  return out;
}

// REval's tracer leaves out modules, functions and iterators from its locals.
const SKIPPED_TYPES = /(^|\.)(module|function|builtin_function_or_method|method|generator|map|filter|zip|enumerate|reversed|[a-z_]*iterator)$/;

type Node =
  | { t: 'name'; id: string }
  | { t: 'const'; repr: string; type: string }
  | { t: 'attr'; of: Node; name: string }
  | { t: 'sub'; of: Node; index: Node }
  | { t: 'tuple'; items: Node[] };

/** The probe's variable as an expression: names, attributes, subscripts, constants, tuples (what REval's VarInterpreter reads). */
export function parseVar(src: string): Node | undefined {
  let i = 0;
  const ws = () => {
    while (i < src.length && /\s/.test(src[i]!)) i++;
  };
  const atom = (): Node | undefined => {
    ws();
    const rest = src.slice(i);
    let m = /^[A-Za-z_]\w*/.exec(rest);
    if (m) {
      i += m[0].length;
      if (m[0] === 'True' || m[0] === 'False' || m[0] === 'None') return { t: 'const', repr: m[0], type: m[0] === 'None' ? 'NoneType' : 'bool' };
      return { t: 'name', id: m[0] };
    }
    m = /^-?\d+(?![.\w])/.exec(rest);
    if (m) {
      i += m[0].length;
      return { t: 'const', repr: String(Number(m[0])), type: 'int' };
    }
    // Simple string constants only (no escapes): their repr is the single-quoted text.
    m = /^'([^'\\"]*)'|^"([^"\\']*)"/.exec(rest);
    if (m) {
      i += m[0].length;
      return { t: 'const', repr: `'${m[1] ?? m[2]}'`, type: 'str' };
    }
    if (src[i] === '(') {
      i++;
      const items = list(')');
      if (!items) return undefined;
      return items.single ? items.nodes[0] : { t: 'tuple', items: items.nodes };
    }
    return undefined;
  };
  const list = (close: string): { nodes: Node[]; single: boolean } | undefined => {
    const nodes: Node[] = [];
    let comma = false;
    for (;;) {
      ws();
      if (src[i] === close) {
        i++;
        break;
      }
      const n = expr();
      if (!n) return undefined;
      nodes.push(n);
      ws();
      if (src[i] === ',') {
        comma = true;
        i++;
      } else if (src[i] !== close) return undefined;
    }
    return nodes.length ? { nodes, single: nodes.length === 1 && !comma } : undefined;
  };
  const expr = (): Node | undefined => {
    let n = atom();
    for (;;) {
      if (!n) return undefined;
      ws();
      if (src[i] === '.') {
        i++;
        ws();
        const m = /^[A-Za-z_]\w*/.exec(src.slice(i));
        if (!m) return undefined;
        i += m[0].length;
        n = { t: 'attr', of: n, name: m[0] };
      } else if (src[i] === '[') {
        i++;
        const items = list(']');
        if (!items) return undefined;
        n = { t: 'sub', of: n, index: items.single ? items.nodes[0]! : { t: 'tuple', items: items.nodes } };
      } else return n;
    }
  };
  const first = expr();
  ws();
  if (first && src[i] === ',') {
    // A bare tuple `a, b`.
    const nodes = [first];
    while (src[i] === ',') {
      i++;
      const n = expr();
      if (!n) return undefined;
      nodes.push(n);
      ws();
    }
    return i === src.length ? { t: 'tuple', items: nodes } : undefined;
  }
  return first && i === src.length ? first : undefined;
}

class Inexact extends Error {}

/** A value whose repr our literal reader reads back exactly (inf, nan and sets included). */
const plain = (v: Value): boolean => v.literal || /^(float|set|frozenset)$/.test(v.type);

function tupleValue(items: Value[]): Value {
  const repr = items.length === 1 ? `(${items[0]!.repr},)` : `(${items.map((v) => v.repr).join(', ')})`;
  return {
    repr,
    type: 'tuple',
    literal: items.every((v) => v.literal),
    len: items.length,
    items,
    ...(items.some((v) => v.truncated) ? { truncated: true } : {}),
  };
}

function index(container: Value, key: Value): Value | undefined {
  if (container.truncated) throw new Inexact('a container was cut at a bound');
  if (container.len === 0) return undefined; // an empty container: KeyError / IndexError, no value
  if (container.entries) {
    if ((container.len ?? container.entries.length) !== container.entries.length) throw new Inexact('a dict was cut at a bound');
    const hit = container.entries.find(([k]) => k.repr === key.repr);
    return hit?.[1];
  }
  if (container.items && /^(list|tuple)$/.test(container.type)) {
    if (key.type !== 'int' && key.type !== 'bool') return undefined; // TypeError in REval: no value
    if ((container.len ?? container.items.length) !== container.items.length) throw new Inexact('a list was cut at a bound');
    const n = Number(key.repr === 'True' ? 1 : key.repr === 'False' ? 0 : key.repr);
    const at = n < 0 ? container.items.length + n : n;
    return container.items[at];
  }
  if (container.type === 'str') throw new Inexact('an item of a string');
  throw new Inexact(`an item of a ${container.type}`);
}

/**
 * The values of `node` over the locals of every state after the line, the
 * way REval's reader takes them: each name is looked up in all those states
 * at once, and an item or a tuple is the product of its parts' values (so a
 * dict from one run may be indexed by a key from another, as in REval).
 */
function evaluate(node: Node, states: readonly Readonly<Record<string, Value>>[]): Value[] | null {
  switch (node.t) {
    case 'const':
      return [{ repr: node.repr, type: node.type, literal: true }];
    case 'name': {
      const out = states.flatMap((locals) => {
        const v = locals[node.id];
        return v && !SKIPPED_TYPES.test(v.type) ? [v] : [];
      });
      return out.length ? out : null;
    }
    case 'attr': {
      const of = evaluate(node.of, states);
      if (!of) return null;
      const out: Value[] = [];
      for (const o of of) {
        const a = o.attrs?.[node.name];
        if (a) out.push(a);
        else if (!o.literal) throw new Inexact(`attribute ${node.name} not recorded`);
      }
      return out.length ? out : null;
    }
    case 'sub': {
      const of = evaluate(node.of, states);
      const ix = evaluate(node.index, states);
      if (!of || !ix) return null;
      const out: Value[] = [];
      for (const o of of)
        for (const k of ix) {
          const v = index(o, k);
          if (v) out.push(v);
        }
      return out.length ? out : null;
    }
    case 'tuple': {
      const parts = node.items.map((n) => evaluate(n, states));
      if (parts.some((p) => p === null)) return null;
      let acc: Value[][] = [[]];
      for (const p of parts as Value[][]) acc = acc.flatMap((pre) => p.map((v) => [...pre, v]));
      return acc.map(tupleValue);
    }
  }
}

/** REval's truth for a probe (line, variable) over the state sequence of one run. */
export function probeTruth(trace: Trace, d: DecodedTrace, states: readonly RevalState[], line: number, variable: string): ProbeTruth {
  const at = states.flatMap((s, i) => (s.line === line ? [i] : []));
  const covered = at.length > 0;
  const next = covered ? [...new Set(at.map((i) => (i + 1 < states.length ? states[i + 1]!.line : -1)))] : [-1];
  const complete = trace.outcome.kind === 'returned';
  let defined = complete;
  let why: string | undefined = complete ? undefined : `the run ended by ${trace.outcome.kind}`;
  let values: Value[] | null = null;
  if (covered) {
    const node = parseVar(variable);
    if (!node) {
      // REval's reader knows names, attributes, items, constants and tuples;
      // anything else (`a[i - 1]`) it reads as Nil, and so do we.
      defined = false;
      why = `REval reads ${variable} as Nil (an expression it does not evaluate)`;
    } else {
      let found: Value[] = [];
      try {
        const after = at.flatMap((i) => {
          const st = states[i + 1 < states.length ? i + 1 : i]!;
          return st.localsStep < 0 ? [] : [d.locals(st.localsStep)];
        });
        found = evaluate(node, after) ?? [];
        if (found.some((v) => v.truncated)) {
          defined = false;
          why = 'a value was cut at a bound';
        } else if (defined && !found.every(plain)) {
          defined = false;
          why = `a ${found.find((v) => !plain(v))!.type} value (not a literal: REval evaluates such answers)`;
        }
      } catch (err) {
        if (!(err instanceof Inexact)) throw err;
        defined = false;
        why = err.message;
      }
      values = found.length ? found : null;
    }
  }
  return { covered, next, values, defined, ...(why ? { why } : {}) };
}
