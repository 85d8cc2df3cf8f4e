// Which values a question may be about (questions/generate.ts `askable`): a C
// value whose text holds an address — a pointer, or a struct or array holding
// one — is never asked, in replay as in a live session, while the same shapes
// without a pointer are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askable } from '../../src/engine/questions/generate';
import type { Value } from '../../src/engine/trace/schema';

const int = (n: number): Value => ({ repr: String(n), type: 'int', literal: true });
const ptr: Value = { repr: 'address', type: 'int *', literal: false };

test('a struct or an array holding a pointer is not askable; the same shapes without one are', () => {
  const point: Value = { repr: '{.x = 4, .y = 5}', type: 'point', literal: false, attrs: { x: int(4), y: int(5) } };
  const node: Value = { repr: '{.v = 4, .next = address}', type: 'node', literal: false, attrs: { v: int(4), next: ptr } };
  const nested: Value = { repr: '{.n = {.v = 4, .next = address}}', type: 'wrap', literal: false, attrs: { n: node } };
  const ints: Value = { repr: '[1, 2]', type: 'int[2]', literal: true, len: 2, items: [int(1), int(2)] };
  const ptrs: Value = { repr: '[address, address]', type: 'int *[2]', literal: false, len: 2, items: [ptr, ptr] };
  assert.equal(askable(point), true);
  assert.equal(askable(ints), true);
  assert.equal(askable(ptr), false);
  assert.equal(askable(node), false, 'a struct with a pointer field');
  assert.equal(askable(nested), false, 'a pointer two levels down');
  assert.equal(askable(ptrs), false, 'an array of pointers');
  // Python values are untouched: a list of lists is asked.
  assert.equal(
    askable({ repr: '[[1]]', type: 'list', literal: true, len: 1, items: [{ repr: '[1]', type: 'list', literal: true, len: 1, items: [int(1)] }] }),
    true,
  );
});
