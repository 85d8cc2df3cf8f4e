// Finds the tests of a Python file, the way pytest and unittest collect them,
// by a line scan (like engine/python-functions: fast, and it keeps working
// while the file does not parse), and the code a test exercises: the first
// call it makes into the code under test, and that code's source.
import { findFunctions } from '../python-functions';

/** A test the editor can predict and run: a pytest function, a method of a pytest `Test*` class, or a unittest test method. */
export interface PythonTest {
  name: string;
  /** 1-based line of the `def`. */
  line: number;
  style: 'pytest' | 'unittest';
  /** The class a test method belongs to. */
  className?: string;
  /** How the tracer runs it, evaluated in the file's namespace (docs/self-simulation.md#in-the-editor). */
  entry: string;
  /** How the prompt names it: `passes(test_add)`, `passes(TestCalc.test_add)`. */
  label: string;
}

const CLASS = /^class[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\(([^)]*)\))?[ \t]*:/;
const FROM_IMPORT = /^from[ \t]+([A-Za-z_][A-Za-z0-9_.]*)[ \t]+import[ \t]+\(?([^#)]*)/;

const indentOf = (text: string) => text.length - text.trimStart().length;
const isCode = (text: string) => text.trim() !== '' && !text.trimStart().startsWith('#');

/**
 * The tests of `source`: module-level `def test_*()` (pytest), `def test_*(self)`
 * in a module-level `class Test*` (pytest) or in a class whose bases name
 * `TestCase` (unittest). Tests that take other parameters (pytest fixtures,
 * parametrize) and async tests are left out: they cannot be called directly.
 */
export function findTests(source: string): PythonTest[] {
  const lines = source.split('\n');
  const tests: PythonTest[] = [];
  for (const fn of findFunctions(source)) {
    if (!fn.name.startsWith('test') || fn.async) continue;
    const params = fn.params.replace(/\s+/g, '');
    if (fn.topLevel) {
      if (params === '') tests.push({ name: fn.name, line: fn.line, style: 'pytest', entry: `${fn.name}()`, label: `passes(${fn.name})` });
      continue;
    }
    if (params !== 'self' && params !== 'self,') continue;
    const owner = enclosingClass(lines, fn.line - 1);
    if (!owner) continue;
    const unittest = /(^|[.,\s])TestCase\b/.test(owner.bases);
    if (!unittest && !owner.name.startsWith('Test')) continue;
    tests.push({
      name: fn.name,
      line: fn.line,
      style: unittest ? 'unittest' : 'pytest',
      className: owner.name,
      // debug(): unittest runs setUp, the test and tearDown and lets the failure propagate (no result object swallows it).
      entry: unittest ? `${owner.name}(${JSON.stringify(fn.name)}).debug()` : `${owner.name}().${fn.name}()`,
      label: `passes(${owner.name}.${fn.name})`,
    });
  }
  return tests;
}

/** The module-level class whose body directly holds the `def` on line index `at`, if any. */
function enclosingClass(lines: string[], at: number): { name: string; bases: string; line: number } | undefined {
  const indent = indentOf(lines[at]!);
  for (let i = at - 1; i >= 0; i--) {
    const text = lines[i]!;
    if (!isCode(text) || indentOf(text) >= indent) continue;
    const m = indentOf(text) === 0 ? CLASS.exec(text) : null;
    return m ? { name: m[1]!, bases: m[2] ?? '', line: i } : undefined;
  }
  return undefined;
}

/** Lines [start, end) of the block that starts at line index `start` (a def or class and its indented body). */
export function blockAt(lines: string[], start: number): string {
  const indent = indentOf(lines[start]!);
  let end = start + 1;
  // A multi-line signature or decorator-free header continues until the body starts; the body is everything indented deeper.
  while (end < lines.length && (!isCode(lines[end]!) || indentOf(lines[end]!) > indent)) end++;
  while (end > start + 1 && lines[end - 1]!.trim() === '') end--;
  return lines.slice(start, end).join('\n');
}

/** What the prompt shows and asks about for one test. */
export interface TestContext {
  /** The code under test the test references, then the test (its whole class for a method). */
  code: string;
  /** The first call the test makes into the code under test, as written: `add(2, 3)`. */
  call?: string;
  /** The function that call calls. */
  callee?: string;
  /** True when the callee is defined in the test's own file (so the tracer records its return value). */
  calleeTraced: boolean;
}

/**
 * Reads the test and the code it exercises: functions of the same file, and
 * functions imported with `from M import f` from a module `readModule(M)`
 * returns the source of (a sibling file); anything else is left out.
 */
export function testContext(source: string, test: PythonTest, readModule: (module: string) => string | undefined): TestContext {
  const lines = source.split('\n');
  const own = new Map<string, number>();
  for (const fn of findFunctions(source)) if (fn.topLevel && !fn.name.startsWith('test')) own.set(fn.name, fn.line - 1);
  const imported = new Map<string, string>();
  for (const [i, first] of lines.entries()) {
    // `from m import (a,\n    b)`: the names run on to the closing parenthesis.
    let text = first.replace(/#.*/, '');
    for (let j = i + 1; text.includes('(') && !text.includes(')') && j < lines.length; j++) text += ` ${lines[j]!.replace(/#.*/, '')}`;
    const m = FROM_IMPORT.exec(text);
    if (!m) continue;
    for (const part of m[2]!.split(',')) {
      const [name, alias] = part.trim().split(/\s+as\s+/);
      if (name && /^[A-Za-z_]\w*$/.test(name)) imported.set((alias ?? name).trim(), `${m[1]}\u0000${name}`);
    }
  }
  const testStart = test.className ? lines.findIndex((l) => CLASS.exec(l)?.[1] === test.className) : test.line - 1;
  const testCode = blockAt(lines, testStart >= 0 ? testStart : test.line - 1);
  const body = blockAt(lines, test.line - 1)
    .split('\n')
    .slice(1)
    .join('\n');

  const known = (name: string) => own.has(name) || imported.has(name);
  const called = callsIn(body).filter((c) => known(c.callee));
  const referenced = [...new Set(identifiers(testCode).filter(known))];
  const parts: string[] = [];
  for (const name of referenced) {
    const at = own.get(name);
    if (at !== undefined) {
      parts.push(blockAt(lines, at));
      continue;
    }
    const [module, original] = imported.get(name)!.split('\u0000') as [string, string];
    const other = readModule(module);
    if (other === undefined) continue;
    const otherLines = other.split('\n');
    const def = findFunctions(other).find((f) => f.topLevel && f.name === original);
    if (def) parts.push(`# from ${module}.py\n${blockAt(otherLines, def.line - 1)}`);
  }
  parts.push(testCode);
  const first = called[0];
  return { code: parts.join('\n\n\n') + '\n', call: first?.text, callee: first?.callee, calleeTraced: first ? own.has(first.callee) : false };
}

function identifiers(code: string): string[] {
  return [...code.matchAll(/(?<![.\w])([A-Za-z_]\w*)/g)].map((m) => m[1]!);
}

/** Calls `name(...)` in `code` (not method calls `x.name(...)`), in order, with their balanced argument text. */
export function callsIn(code: string): { callee: string; text: string }[] {
  const out: { callee: string; text: string }[] = [];
  for (const m of code.matchAll(/(?<![.\w])([A-Za-z_]\w*)[ \t]*\(/g)) {
    const end = closingParen(code, m.index + m[0].length - 1);
    if (end > 0) out.push({ callee: m[1]!, text: `${m[1]}${code.slice(m.index + m[0].length - 1, end + 1)}` });
  }
  return out;
}

/** Index of the `)` matching the `(` at `open`, skipping string literals; -1 if it does not close. */
function closingParen(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i]!;
    if (c === '"' || c === "'") {
      const close = code.indexOf(c, i + 1);
      if (close < 0) return -1;
      i = close;
    } else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return c === ')' ? i : -1;
    }
  }
  return -1;
}
