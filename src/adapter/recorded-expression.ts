// A small, safe evaluator of Python-like expressions over recorded values.
// It never runs code: names resolve to values captured by the tracer, and the
// only operations are literals, arithmetic, comparisons, boolean logic,
// indexing, attribute access on recorded children and a few pure builtins.
// Used for watch / hover / Debug Console and for breakpoint conditions.
import type { Value } from '../engine/trace/schema';

/** A value during evaluation: a Python primitive, a literal sequence, or a recorded value. */
export type Py =
  | { t: 'none' }
  | { t: 'bool'; v: boolean }
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'str'; v: string }
  | { t: 'seq'; kind: 'list' | 'tuple'; items: Py[] }
  | { t: 'rec'; value: Value };

export type EvalResult = { ok: true; value: Py } | { ok: false; message: string };

/** Resolves a bare name to a recorded value, or undefined when it was not recorded. */
export type NameLookup = (name: string) => Value | undefined;

class EvalError extends Error {}

/**
 * What one expression may build: a watch, a hover or a breakpoint condition is
 * evaluated on the adapter's thread, so a result over these bounds is refused
 * before it is built (`'x' * 40_000_000`, `(10**10000)**10000`), not after.
 */
export const EVAL_BOUNDS = { stringChars: 100_000, sequenceItems: 10_000, intBits: 100_000, sourceChars: 10_000 } as const;

function tooBig(what: string, size: bigint | number, bound: number, unit: string): never {
  throw new EvalError(`the result would be ${what} of ${size} ${unit}, more than the ${bound} a watch expression may build`);
}

function bitLength(x: bigint): number {
  return (x < 0n ? -x : x).toString(16).length * 4;
}

// ---------------------------------------------------------------- tokens

type Token = { k: 'num'; text: string } | { k: 'str'; v: string } | { k: 'name'; v: string } | { k: 'op'; v: string } | { k: 'end' };

const OPERATORS = ['**', '//', '==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '%', '(', ')', '[', ']', ',', '.', ':'];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const num = /^(?:\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?|\.\d[\d_]*(?:[eE][+-]?\d+)?)/.exec(src.slice(i));
    if (num) {
      out.push({ k: 'num', text: num[0].replace(/_/g, '') });
      i += num[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z_0-9]*/.exec(src.slice(i));
    if (name) {
      const word = name[0];
      i += word.length;
      // String prefixes such as r'..' or b'..' are not supported; only plain strings.
      out.push({ k: 'name', v: word });
      continue;
    }
    if (c === '"' || c === "'") {
      const [value, next] = readString(src, i);
      out.push({ k: 'str', v: value });
      i = next;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (!op) throw new EvalError(`unexpected character '${c}' at column ${i + 1}`);
    out.push({ k: 'op', v: op });
    i += op.length;
  }
  out.push({ k: 'end' });
  return out;
}

/** Reads a quoted Python string starting at `start`; returns its value and the index after it. */
function readString(src: string, start: number): [string, number] {
  const quote = src[start]!;
  let i = start + 1;
  let v = '';
  while (i < src.length) {
    const c = src[i]!;
    if (c === quote) return [v, i + 1];
    if (c !== '\\') {
      v += c;
      i++;
      continue;
    }
    const e = src[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        v += '\n';
        break;
      case 't':
        v += '\t';
        break;
      case 'r':
        v += '\r';
        break;
      case '0':
        v += '\0';
        break;
      case '\\':
        v += '\\';
        break;
      case "'":
        v += "'";
        break;
      case '"':
        v += '"';
        break;
      case 'x':
        v += String.fromCodePoint(parseInt(src.slice(i, i + 2), 16));
        i += 2;
        break;
      case 'u':
        v += String.fromCodePoint(parseInt(src.slice(i, i + 4), 16));
        i += 4;
        break;
      case 'U':
        v += String.fromCodePoint(parseInt(src.slice(i, i + 8), 16));
        i += 8;
        break;
      default:
        v += '\\' + (e ?? '');
    }
  }
  throw new EvalError('unterminated string');
}

// ---------------------------------------------------------------- syntax

type Node =
  | { n: 'lit'; value: Py }
  | { n: 'name'; v: string }
  | { n: 'seq'; kind: 'list' | 'tuple'; items: Node[] }
  | { n: 'unary'; op: string; arg: Node }
  | { n: 'bin'; op: string; left: Node; right: Node }
  | { n: 'cmp'; first: Node; rest: [string, Node][] }
  | { n: 'and' | 'or'; left: Node; right: Node }
  | { n: 'not'; arg: Node }
  | { n: 'index'; target: Node; index: Node }
  | { n: 'attr'; target: Node; name: string }
  | { n: 'call'; fn: string; args: Node[] };

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const node = this.expr();
    if (this.peek().k !== 'end') throw new EvalError(`unexpected ${describe(this.peek())}`);
    return node;
  }

  private peek(): Token {
    return this.tokens[this.pos]!;
  }
  private next(): Token {
    return this.tokens[this.pos++]!;
  }
  private isOp(v: string): boolean {
    const t = this.peek();
    return t.k === 'op' && t.v === v;
  }
  private isWord(v: string): boolean {
    const t = this.peek();
    return t.k === 'name' && t.v === v;
  }
  private expect(v: string): void {
    if (!this.isOp(v)) throw new EvalError(`expected '${v}' but found ${describe(this.peek())}`);
    this.pos++;
  }

  private expr(): Node {
    let left = this.andExpr();
    while (this.isWord('or')) {
      this.pos++;
      left = { n: 'or', left, right: this.andExpr() };
    }
    return left;
  }
  private andExpr(): Node {
    let left = this.notExpr();
    while (this.isWord('and')) {
      this.pos++;
      left = { n: 'and', left, right: this.notExpr() };
    }
    return left;
  }
  private notExpr(): Node {
    if (this.isWord('not')) {
      this.pos++;
      return { n: 'not', arg: this.notExpr() };
    }
    return this.comparison();
  }
  private comparison(): Node {
    const first = this.arith();
    const rest: [string, Node][] = [];
    for (;;) {
      const t = this.peek();
      let op: string | undefined;
      if (t.k === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.v)) {
        op = t.v;
        this.pos++;
      } else if (this.isWord('in')) {
        op = 'in';
        this.pos++;
      } else if (this.isWord('not') && this.tokens[this.pos + 1]?.k === 'name' && (this.tokens[this.pos + 1] as { v: string }).v === 'in') {
        op = 'not in';
        this.pos += 2;
      } else if (this.isWord('is')) {
        this.pos++;
        op = 'is';
        if (this.isWord('not')) {
          this.pos++;
          op = 'is not';
        }
      }
      if (!op) break;
      rest.push([op, this.arith()]);
    }
    return rest.length ? { n: 'cmp', first, rest } : first;
  }
  private arith(): Node {
    let left = this.term();
    while (this.isOp('+') || this.isOp('-')) {
      const op = (this.next() as { v: string }).v;
      left = { n: 'bin', op, left, right: this.term() };
    }
    return left;
  }
  private term(): Node {
    let left = this.unary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('//') || this.isOp('%')) {
      const op = (this.next() as { v: string }).v;
      left = { n: 'bin', op, left, right: this.unary() };
    }
    return left;
  }
  private unary(): Node {
    if (this.isOp('-') || this.isOp('+')) {
      const op = (this.next() as { v: string }).v;
      return { n: 'unary', op, arg: this.unary() };
    }
    return this.power();
  }
  private power(): Node {
    const base = this.postfix();
    if (this.isOp('**')) {
      this.pos++;
      return { n: 'bin', op: '**', left: base, right: this.unary() };
    }
    return base;
  }
  private postfix(): Node {
    let node = this.atom();
    for (;;) {
      if (this.isOp('[')) {
        this.pos++;
        const index = this.expr();
        this.expect(']');
        node = { n: 'index', target: node, index };
      } else if (this.isOp('.')) {
        this.pos++;
        const t = this.next();
        if (t.k !== 'name') throw new EvalError(`expected an attribute name after '.'`);
        node = { n: 'attr', target: node, name: t.v };
      } else if (this.isOp('(')) {
        if (node.n !== 'name') throw new EvalError('only builtin functions can be called');
        this.pos++;
        const args: Node[] = [];
        while (!this.isOp(')')) {
          args.push(this.expr());
          if (!this.isOp(')')) this.expect(',');
        }
        this.pos++;
        node = { n: 'call', fn: node.v, args };
      } else {
        return node;
      }
    }
  }
  private atom(): Node {
    const t = this.next();
    if (t.k === 'num') {
      if (/^\d+$/.test(t.text)) return { n: 'lit', value: { t: 'int', v: BigInt(t.text) } };
      return { n: 'lit', value: { t: 'float', v: Number(t.text) } };
    }
    if (t.k === 'str') {
      let v = t.v;
      // Adjacent string literals concatenate, as in Python.
      while (this.peek().k === 'str') v += (this.next() as { v: string }).v;
      return { n: 'lit', value: { t: 'str', v } };
    }
    if (t.k === 'name') {
      if (t.v === 'True' || t.v === 'False') return { n: 'lit', value: { t: 'bool', v: t.v === 'True' } };
      if (t.v === 'None') return { n: 'lit', value: { t: 'none' } };
      if (['and', 'or', 'not', 'in', 'is', 'lambda', 'yield', 'await'].includes(t.v)) {
        throw new EvalError(`unexpected '${t.v}'`);
      }
      return { n: 'name', v: t.v };
    }
    if (t.k === 'op' && (t.v === '(' || t.v === '[')) {
      const close = t.v === '(' ? ')' : ']';
      const items: Node[] = [];
      let trailingComma = false;
      while (!this.isOp(close)) {
        items.push(this.expr());
        trailingComma = false;
        if (!this.isOp(close)) {
          this.expect(',');
          trailingComma = true;
        }
      }
      this.pos++;
      if (t.v === '(' && items.length === 1 && !trailingComma) return items[0]!;
      return { n: 'seq', kind: t.v === '(' ? 'tuple' : 'list', items };
    }
    throw new EvalError(`unexpected ${describe(t)}`);
  }
}

function describe(t: Token): string {
  switch (t.k) {
    case 'end':
      return 'end of expression';
    case 'num':
      return `'${t.text}'`;
    case 'str':
      return 'a string';
    case 'name':
      return `'${t.v}'`;
    case 'op':
      return `'${t.v}'`;
  }
}

// ---------------------------------------------------------------- values

/** Turns a recorded value into a primitive when its repr is an exact literal of a primitive type. */
export function fromRecorded(value: Value): Py {
  if (!value.truncated) {
    switch (value.type) {
      case 'NoneType':
        return { t: 'none' };
      case 'bool':
        return { t: 'bool', v: value.repr === 'True' };
      case 'int':
        if (/^-?\d+$/.test(value.repr)) return { t: 'int', v: BigInt(value.repr) };
        break;
      case 'float': {
        const map: Record<string, number> = { inf: Infinity, '-inf': -Infinity, nan: NaN };
        const v = value.repr in map ? map[value.repr]! : Number(value.repr);
        if (!Number.isNaN(v) || value.repr === 'nan') return { t: 'float', v };
        break;
      }
      case 'str':
        if (/^['"]/.test(value.repr)) return { t: 'str', v: readString(value.repr, 0)[0] };
        break;
    }
  }
  return { t: 'rec', value };
}

function typeName(v: Py): string {
  switch (v.t) {
    case 'none':
      return 'NoneType';
    case 'bool':
      return 'bool';
    case 'int':
      return 'int';
    case 'float':
      return 'float';
    case 'str':
      return 'str';
    case 'seq':
      return v.kind;
    case 'rec':
      return v.value.type;
  }
}

function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (ch.charCodeAt(0) < 0x20) out += '\\x' + ch.charCodeAt(0).toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + quote;
}

function floatRepr(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return v.toFixed(1);
  return String(v);
}

/** Python's repr of an evaluated value (recorded values keep their recorded repr). */
export function reprOf(v: Py): string {
  switch (v.t) {
    case 'none':
      return 'None';
    case 'bool':
      return v.v ? 'True' : 'False';
    case 'int':
      return v.v.toString();
    case 'float':
      return floatRepr(v.v);
    case 'str':
      return pyStr(v.v);
    case 'seq': {
      const inner = v.items.map(reprOf).join(', ');
      if (v.kind === 'list') return `[${inner}]`;
      return v.items.length === 1 ? `(${inner},)` : `(${inner})`;
    }
    case 'rec':
      return v.value.repr;
  }
}

/** The Python type name of an evaluated value. */
export function typeOf(v: Py): string {
  return typeName(v);
}

function truthy(v: Py): boolean {
  switch (v.t) {
    case 'none':
      return false;
    case 'bool':
      return v.v;
    case 'int':
      return v.v !== 0n;
    case 'float':
      return v.v !== 0;
    case 'str':
      return v.v.length > 0;
    case 'seq':
      return v.items.length > 0;
    case 'rec': {
      const n = lengthOf(v);
      return n === undefined ? true : n > 0;
    }
  }
}

function lengthOf(v: Py): number | undefined {
  if (v.t === 'str') return [...v.v].length;
  if (v.t === 'seq') return v.items.length;
  if (v.t === 'rec') {
    if (v.value.len !== undefined) return v.value.len;
    if (!v.value.truncated) return v.value.items?.length ?? v.value.entries?.length;
  }
  return undefined;
}

/** The elements of a sequence-like value, when all of them were recorded. */
function elements(v: Py): Py[] | undefined {
  if (v.t === 'seq') return v.items;
  if (v.t === 'str') return [...v.v].map((c) => ({ t: 'str', v: c }));
  if (v.t === 'rec' && !v.value.truncated) {
    if (v.value.items) return v.value.items.map(fromRecorded);
    if (v.value.entries) return v.value.entries.map(([k]) => fromRecorded(k));
  }
  return undefined;
}

function isNumber(v: Py): v is { t: 'int'; v: bigint } | { t: 'float'; v: number } | { t: 'bool'; v: boolean } {
  return v.t === 'int' || v.t === 'float' || v.t === 'bool';
}

function toFloat(v: Py): number {
  if (v.t === 'int') return Number(v.v);
  if (v.t === 'float') return v.v;
  if (v.t === 'bool') return v.v ? 1 : 0;
  throw new EvalError(`expected a number, got ${typeName(v)}`);
}

function toInt(v: Py): bigint {
  if (v.t === 'int') return v.v;
  if (v.t === 'bool') return v.v ? 1n : 0n;
  throw new EvalError(`expected an int, got ${typeName(v)}`);
}

function equal(a: Py, b: Py): boolean {
  if (isNumber(a) && isNumber(b)) {
    if (a.t !== 'float' && b.t !== 'float') return toInt(a) === toInt(b);
    return toFloat(a) === toFloat(b);
  }
  if (a.t === 'none' || b.t === 'none') return a.t === b.t;
  if (a.t === 'str' && b.t === 'str') return a.v === b.v;
  const ea = a.t === 'rec' || a.t === 'seq' ? elements(a) : undefined;
  const eb = b.t === 'rec' || b.t === 'seq' ? elements(b) : undefined;
  const kind = (v: Py) => (v.t === 'seq' ? v.kind : v.t === 'rec' ? v.value.type : v.t);
  if (ea && eb && kind(a) === kind(b) && (kind(a) === 'list' || kind(a) === 'tuple')) {
    return ea.length === eb.length && ea.every((x, i) => equal(x, eb[i]!));
  }
  // Anything else (dicts, sets, objects) compares by repr: exact for literals, a fair approximation otherwise.
  return typeName(a) === typeName(b) && reprOf(a) === reprOf(b);
}

function compare(op: string, a: Py, b: Py): boolean {
  switch (op) {
    case '==':
      return equal(a, b);
    case '!=':
      return !equal(a, b);
    case 'is':
      return (a.t === 'none' && b.t === 'none') || (a.t === 'bool' && b.t === 'bool' && a.v === b.v);
    case 'is not':
      return !compare('is', a, b);
    case 'in':
      return contains(b, a);
    case 'not in':
      return !contains(b, a);
  }
  let c: number;
  if (isNumber(a) && isNumber(b)) {
    if (a.t !== 'float' && b.t !== 'float') {
      const x = toInt(a);
      const y = toInt(b);
      c = x < y ? -1 : x > y ? 1 : 0;
    } else {
      c = toFloat(a) - toFloat(b);
    }
  } else if (a.t === 'str' && b.t === 'str') {
    c = a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  } else {
    throw new EvalError(`'${op}' not supported between ${typeName(a)} and ${typeName(b)}`);
  }
  switch (op) {
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    default:
      return c >= 0;
  }
}

function contains(container: Py, item: Py): boolean {
  if (container.t === 'str') {
    if (item.t !== 'str') throw new EvalError(`'in <string>' requires a string, got ${typeName(item)}`);
    return container.v.includes(item.v);
  }
  const els = elements(container);
  if (!els) throw new EvalError(`cannot search ${typeName(container)}: its elements were not all recorded`);
  return els.some((e) => equal(e, item));
}

function arithmetic(op: string, a: Py, b: Py): Py {
  if (op === '+' && a.t === 'str' && b.t === 'str') {
    if (a.v.length + b.v.length > EVAL_BOUNDS.stringChars) tooBig('a string', a.v.length + b.v.length, EVAL_BOUNDS.stringChars, 'characters');
    return { t: 'str', v: a.v + b.v };
  }
  if (op === '*' && a.t === 'str' && (b.t === 'int' || b.t === 'bool')) {
    const times = toInt(b) < 0n ? 0n : toInt(b);
    const size = BigInt(a.v.length) * times;
    if (size > BigInt(EVAL_BOUNDS.stringChars)) tooBig('a string', size, EVAL_BOUNDS.stringChars, 'characters');
    return { t: 'str', v: a.v.repeat(Number(times)) };
  }
  if (op === '+' && (a.t === 'seq' || a.t === 'rec') && (b.t === 'seq' || b.t === 'rec')) {
    const ea = elements(a);
    const eb = elements(b);
    const ka = a.t === 'seq' ? a.kind : a.value.type;
    const kb = b.t === 'seq' ? b.kind : b.value.type;
    if (ea && eb && ka === kb && (ka === 'list' || ka === 'tuple')) {
      if (ea.length + eb.length > EVAL_BOUNDS.sequenceItems) tooBig(`a ${ka}`, ea.length + eb.length, EVAL_BOUNDS.sequenceItems, 'items');
      return { t: 'seq', kind: ka, items: [...ea, ...eb] };
    }
  }
  if (!isNumber(a) || !isNumber(b)) {
    throw new EvalError(`unsupported operand types for ${op}: ${typeName(a)} and ${typeName(b)}`);
  }
  const ints = a.t !== 'float' && b.t !== 'float';
  if (ints) {
    const x = toInt(a);
    const y = toInt(b);
    switch (op) {
      case '+':
        return { t: 'int', v: x + y };
      case '-':
        return { t: 'int', v: x - y };
      case '*': {
        const bits = bitLength(x) + bitLength(y);
        if (bits > EVAL_BOUNDS.intBits) tooBig('an int', bits, EVAL_BOUNDS.intBits, 'bits');
        return { t: 'int', v: x * y };
      }
      case '/':
        if (y === 0n) throw new EvalError('division by zero');
        return { t: 'float', v: Number(x) / Number(y) };
      case '//': {
        if (y === 0n) throw new EvalError('integer division or modulo by zero');
        const q = x / y;
        return { t: 'int', v: x % y !== 0n && x < 0n !== y < 0n ? q - 1n : q };
      }
      case '%': {
        if (y === 0n) throw new EvalError('integer division or modulo by zero');
        const r = x % y;
        return { t: 'int', v: r !== 0n && r < 0n !== y < 0n ? r + y : r };
      }
      case '**':
        if (y < 0n) return { t: 'float', v: Number(x) ** Number(y) };
        if (y > 10000n) throw new EvalError('exponent too large');
        if (x !== 0n && x !== 1n && x !== -1n) {
          const bits = BigInt(bitLength(x) - 1) * y;
          if (bits > BigInt(EVAL_BOUNDS.intBits)) tooBig('an int', bits, EVAL_BOUNDS.intBits, 'bits');
        }
        return { t: 'int', v: x ** y };
    }
  }
  const x = toFloat(a);
  const y = toFloat(b);
  switch (op) {
    case '+':
      return { t: 'float', v: x + y };
    case '-':
      return { t: 'float', v: x - y };
    case '*':
      return { t: 'float', v: x * y };
    case '/':
      if (y === 0) throw new EvalError('float division by zero');
      return { t: 'float', v: x / y };
    case '//':
      if (y === 0) throw new EvalError('float floor division by zero');
      return { t: 'float', v: Math.floor(x / y) };
    case '%':
      if (y === 0) throw new EvalError('float modulo');
      return { t: 'float', v: x - y * Math.floor(x / y) };
    default:
      return { t: 'float', v: x ** y };
  }
}

function index(target: Py, key: Py): Py {
  if (target.t === 'str' || target.t === 'seq' || (target.t === 'rec' && target.value.items)) {
    const els =
      target.t === 'str' ? [...target.v].map((c): Py => ({ t: 'str', v: c })) : target.t === 'seq' ? target.items : target.value.items!.map(fromRecorded);
    let i = Number(toInt(key));
    const n = lengthOf(target) ?? els.length;
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw new EvalError(`index ${reprOf(key)} out of range`);
    const el = els[i];
    if (!el) throw new EvalError(`element ${i} was not recorded (the value was truncated)`);
    return el;
  }
  if (target.t === 'rec' && target.value.entries) {
    for (const [k, v] of target.value.entries) {
      if (equal(fromRecorded(k), key)) return fromRecorded(v);
    }
    if (target.value.truncated) throw new EvalError(`key ${reprOf(key)} was not among the recorded entries (truncated)`);
    throw new EvalError(`KeyError: ${reprOf(key)}`);
  }
  throw new EvalError(`${typeName(target)} cannot be indexed with the recorded data`);
}

function attribute(target: Py, name: string): Py {
  if (target.t === 'rec' && target.value.attrs) {
    const v = Object.hasOwn(target.value.attrs, name) ? target.value.attrs[name] : undefined;
    if (v) return fromRecorded(v);
  }
  throw new EvalError(`'${typeName(target)}' has no recorded attribute '${name}'`);
}

const BUILTINS: Record<string, (args: Py[]) => Py> = {
  len: ([x, ...rest]) => {
    if (!x || rest.length) throw new EvalError('len() takes exactly one argument');
    const n = lengthOf(x);
    if (n === undefined) throw new EvalError(`object of type '${typeName(x)}' has no recorded len()`);
    return { t: 'int', v: BigInt(n) };
  },
  abs: ([x]) => {
    if (!x) throw new EvalError('abs() takes exactly one argument');
    if (x.t === 'int') return { t: 'int', v: x.v < 0n ? -x.v : x.v };
    return { t: 'float', v: Math.abs(toFloat(x)) };
  },
  min: (args) => extreme(args, '<'),
  max: (args) => extreme(args, '>'),
  sum: ([x]) => {
    const els = x && elements(x);
    if (!els) throw new EvalError('sum() needs a fully recorded sequence');
    return els.reduce<Py>((acc, e) => arithmetic('+', acc, e), { t: 'int', v: 0n });
  },
};

function extreme(args: Py[], op: '<' | '>'): Py {
  const els = args.length === 1 ? elements(args[0]!) : args;
  if (!els || els.length === 0) throw new EvalError('min()/max() need a non-empty, fully recorded sequence');
  return els.reduce((best, e) => (compare(op, e, best) ? e : best));
}

function evaluate(node: Node, lookup: NameLookup): Py {
  switch (node.n) {
    case 'lit':
      return node.value;
    case 'name': {
      const v = lookup(node.v);
      if (!v) throw new EvalError(`name '${node.v}' is not recorded at this step`);
      return fromRecorded(v);
    }
    case 'seq':
      return { t: 'seq', kind: node.kind, items: node.items.map((i) => evaluate(i, lookup)) };
    case 'unary': {
      const v = evaluate(node.arg, lookup);
      if (node.op === '+') return isNumber(v) ? v : arithmetic('+', { t: 'int', v: 0n }, v);
      return v.t === 'float' ? { t: 'float', v: -v.v } : { t: 'int', v: -toInt(v) };
    }
    case 'bin':
      return arithmetic(node.op, evaluate(node.left, lookup), evaluate(node.right, lookup));
    case 'cmp': {
      let left = evaluate(node.first, lookup);
      for (const [op, rightNode] of node.rest) {
        const right = evaluate(rightNode, lookup);
        if (!compare(op, left, right)) return { t: 'bool', v: false };
        left = right;
      }
      return { t: 'bool', v: true };
    }
    case 'and': {
      const l = evaluate(node.left, lookup);
      return truthy(l) ? evaluate(node.right, lookup) : l;
    }
    case 'or': {
      const l = evaluate(node.left, lookup);
      return truthy(l) ? l : evaluate(node.right, lookup);
    }
    case 'not':
      return { t: 'bool', v: !truthy(evaluate(node.arg, lookup)) };
    case 'index':
      return index(evaluate(node.target, lookup), evaluate(node.index, lookup));
    case 'attr':
      return attribute(evaluate(node.target, lookup), node.name);
    case 'call': {
      const fn = Object.hasOwn(BUILTINS, node.fn) ? BUILTINS[node.fn] : undefined;
      if (!fn) throw new EvalError(`'${node.fn}()' is not available: only ${Object.keys(BUILTINS).join(', ')} can be called on recorded values`);
      return fn(node.args.map((a) => evaluate(a, lookup)));
    }
  }
}

const parsed = new Map<string, Node>();

/** Evaluates `source` against recorded values; errors come back as values with a readable message. */
export function evaluateRecorded(source: string, lookup: NameLookup): EvalResult {
  try {
    // Breakpoint conditions are evaluated at every run of their line: parse once.
    let node = parsed.get(source);
    if (!node) {
      if (source.length > EVAL_BOUNDS.sourceChars)
        throw new EvalError(`the expression is ${source.length} characters long; at most ${EVAL_BOUNDS.sourceChars} are evaluated`);
      node = new Parser(tokenize(source)).parse();
      if (parsed.size > 500) parsed.clear();
      parsed.set(source, node);
    }
    return { ok: true, value: evaluate(node, lookup) };
  } catch (err) {
    if (err instanceof EvalError) return { ok: false, message: err.message };
    if (err instanceof RangeError || err instanceof SyntaxError) return { ok: false, message: err.message };
    throw err;
  }
}

/** Python truthiness of an evaluated value (for breakpoint conditions). */
export function isTruthy(v: Py): boolean {
  return truthy(v);
}
