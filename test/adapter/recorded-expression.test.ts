// The expression evaluator behind watch, hover and breakpoint conditions:
// Python semantics on recorded values, and no way to run code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Value } from '../../src/engine/trace/schema';
import { evaluateRecorded, isTruthy, reprOf } from '../../src/adapter/recorded-expression';

const int = (n: number): Value => ({ repr: String(n), type: 'int', literal: true });
const str = (s: string): Value => ({ repr: `'${s}'`, type: 'str', literal: true });
const scope: Record<string, Value> = {
  n: int(7),
  name: str('ab'),
  xs: { repr: '[3, 1, 2]', type: 'list', literal: true, len: 3, items: [int(3), int(1), int(2)] },
  d: {
    repr: "{'a': 1, 'b': [2]}",
    type: 'dict',
    literal: true,
    len: 2,
    entries: [
      [str('a'), int(1)],
      [str('b'), { repr: '[2]', type: 'list', literal: true, len: 1, items: [int(2)] }],
    ],
  },
  p: { repr: '<Point>', type: 'mod.Point', literal: false, attrs: { x: int(4) } },
  big: { repr: '[0, 1, ...]', type: 'list', literal: false, truncated: true, len: 100, items: [int(0), int(1)] },
  nothing: { repr: 'None', type: 'NoneType', literal: true },
  f: { repr: '2.5', type: 'float', literal: true },
};
const ev = (src: string) => {
  const r = evaluateRecorded(src, (name) => scope[name]);
  return r.ok ? reprOf(r.value) : `error: ${r.message}`;
};

test('arithmetic follows Python: floor division and modulo round toward negative infinity', () => {
  assert.equal(ev('n // 2'), '3');
  assert.equal(ev('-n // 2'), '-4');
  assert.equal(ev('-7 % 3'), '2');
  assert.equal(ev('n / 2'), '3.5');
  assert.equal(ev('4 / 2'), '2.0');
  assert.equal(ev('2 ** 100'), '1267650600228229401496703205376');
  assert.equal(ev('f * 2'), '5.0');
  assert.equal(ev("name * 2 + 'c'"), "'ababc'");
});

test('comparisons chain, and/or return operands, in works on recorded containers', () => {
  assert.equal(ev('1 < n <= 7'), 'True');
  assert.equal(ev('1 < n < 7'), 'False');
  assert.equal(ev('nothing or n'), '7');
  assert.equal(ev('n and name'), "'ab'");
  assert.equal(ev('2 in xs and 5 not in xs'), 'True');
  assert.equal(ev("'a' in d"), 'True');
  assert.equal(ev('nothing is None'), 'True');
  assert.equal(ev('xs == [3, 1, 2]'), 'True');
  assert.equal(ev('1 == 1.0'), 'True');
});

test('indexing, attributes and builtins read recorded children', () => {
  assert.equal(ev('xs[-1] + xs[0]'), '5');
  assert.equal(ev("d['b'][0]"), '2');
  assert.equal(ev('p.x * 2'), '8');
  assert.equal(ev('len(big)'), '100');
  assert.equal(ev('max(xs) - min(xs) + sum(xs)'), '8');
  assert.equal(ev('abs(-n)'), '7');
  assert.equal(ev('(1, 2)'), '(1, 2)');
});

test('values that were not recorded are reported, never guessed', () => {
  assert.match(ev('big[50]'), /^error: element 50 was not recorded/);
  assert.match(ev('undefined_name'), /^error: name 'undefined_name' is not recorded/);
  assert.match(ev("d['zz']"), /^error: KeyError: 'zz'/);
  assert.match(ev('p.y'), /^error: 'mod.Point' has no recorded attribute 'y'/);
  assert.match(ev('2 in big'), /^error: cannot search list/);
});

test('nothing can be executed: calls other than pure builtins, lambdas and statements are refused', () => {
  assert.match(ev('print(1)'), /^error: 'print\(\)' is not available/);
  assert.match(ev("__import__('os')"), /^error: '__import__\(\)' is not available/);
  assert.match(ev('xs.append(1)'), /^error: only builtin functions can be called/);
  assert.match(ev('lambda: 1'), /^error: unexpected 'lambda'/);
  assert.match(ev('n = 3'), /^error: unexpected character '='/);
  assert.match(ev('n +'), /^error: unexpected end of expression/);
});

test('truthiness follows Python for conditions', () => {
  const truthy = (src: string) => {
    const r = evaluateRecorded(src, (name) => scope[name]);
    assert.ok(r.ok);
    return isTruthy(r.value);
  };
  assert.equal(truthy('0'), false);
  assert.equal(truthy("''"), false);
  assert.equal(truthy('[]'), false);
  assert.equal(truthy('xs'), true);
  assert.equal(truthy('nothing'), false);
  assert.equal(truthy('p'), true);
});

test('a watch that would build a huge string, sequence or int is refused before it is built', () => {
  assert.match(ev("'x' * 40000000"), /^error: the result would be a string of 40000000 characters, more than the 100000 a watch expression may build$/);
  assert.match(ev('name * 10**12'), /^error: the result would be a string of 2000000000000 characters/);
  assert.match(ev("('ab' * 50000) + 'c'"), /^error: the result would be a string of 100001 characters/);
  assert.match(ev('(10 ** 10000) ** 10000'), /^error: the result would be an int of \d+ bits, more than the 100000/);
  assert.match(
    ev('(10 ** 10000) * (10 ** 10000) * (10 ** 10000) * (10 ** 10000) * (10 ** 10000) * (10 ** 10000) * (10 ** 10000) * (10 ** 10000)'),
    /^error: the result would be an int/,
  );
  assert.match(ev('1' + ' + 1'.repeat(5000)), /^error: the expression is 20001 characters long; at most 10000 are evaluated$/);
  // Within the bounds, Python's answers.
  assert.equal(ev("len('ab' * 50000)"), '100000');
  assert.equal(ev("'' * 10**30"), "''");
  assert.equal(ev('name * -3'), "''");
  assert.equal(ev('(-1) ** 10000'), '1');
});

test('names that are Object.prototype members are names like any other, never JavaScript', () => {
  const recorded = new Map<string, Value>([
    ['__proto__', int(5)],
    ['constructor', int(6)],
  ]);
  const look = (name: string) => recorded.get(name);
  const evp = (src: string) => {
    const r = evaluateRecorded(src, look);
    return r.ok ? reprOf(r.value) : `error: ${r.message}`;
  };
  assert.equal(evp('__proto__ + constructor'), '11');
  assert.equal(evp('toString'), "error: name 'toString' is not recorded at this step");
  assert.match(evp('constructor()'), /^error: 'constructor\(\)' is not available: only len, abs, min, max, sum can be called/);
  assert.match(evp('toString()'), /^error: 'toString\(\)' is not available/);
  assert.match(evp('hasOwnProperty(1)'), /^error: 'hasOwnProperty\(\)' is not available/);
  assert.equal(ev('p.x'), '4');
  assert.equal(ev('p.constructor'), "error: 'mod.Point' has no recorded attribute 'constructor'");
  assert.equal(ev('p.__proto__'), "error: 'mod.Point' has no recorded attribute '__proto__'");
});
