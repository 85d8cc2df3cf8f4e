// `execverify eval lcb-exec`: LiveCodeBench's code-execution scoring, vectors
// written from its published rules (compute_code_execution_metrics.py,
// extract_execution_code): the answer after `==`, an answer holding the input
// call left out (not counted wrong), `assert output == answer` after the
// program with its predefined names, pass@1 = right / run, 0 when none ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { lcbAnswer } from '../../src/engine/eval/lcb';
import { capturedIO } from '../support/cli';

test("the answer is read by LiveCodeBench's extraction rule", () => {
  assert.equal(lcbAnswer('assert f(x = 1) == 3\nmore text'), '3');
  assert.equal(lcbAnswer('[ANSWER]assert f(x = 1) == [1, 2][/ANSWER]'), '[1, 2]');
  assert.equal(lcbAnswer('[THOUGHT]x == 1 so...[/THOUGHT][ANSWER]assert f(x = 1) == 7[/ANSWER]', true), '7');
  assert.equal(lcbAnswer('  42  '), '42');
  // Only the first `==` splits: the rest of the line is the answer.
  assert.equal(lcbAnswer('assert f() == 1 == 1'), '1');
});

const ROWS = [
  {
    id: 'p1',
    question_id: '1',
    difficulty: 'easy',
    function_name: 'countEven',
    code: 'def countEven(nums):\n    return len([x for x in nums if x % 2 == 0])',
    input: 'countEven(nums = [1, 2, 4])',
    output: '2',
  },
  // Uses deque and gcd without importing them: LiveCodeBench predefines them.
  {
    id: 'p2',
    question_id: '2',
    difficulty: 'medium',
    function_name: 'rot',
    code: 'def rot(a, k):\n    d = deque(a)\n    d.rotate(k)\n    return list(d) + [gcd(12, 18)]',
    input: 'rot(a = [1, 2, 3], k = 1)',
    output: '[3, 1, 2, 6]',
  },
  { id: 'p3', question_id: '3', difficulty: 'hard', function_name: 'h', code: 'def h(s):\n    return s[::-1]', input: 'h(s = "abc")', output: '"cba"' },
];

test('lcb-exec: left-out answers, predefined names, pass@1 per problem and by difficulty', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-lcb-'));
  writeFileSync(join(dir, 'execution.jsonl'), ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const gens = {
    // right, wrong, and one that calls the function (left out): pass@1 = 1 / 2
    p1: [
      'assert countEven(nums = [1, 2, 4]) == 2',
      'assert countEven(nums = [1, 2, 4]) == 3',
      'assert countEven(nums = [1, 2, 4]) == countEven(nums = [1, 2, 4])',
    ],
    // right through the predefined names; an expression equal to it is right too (the assertion runs): 2 / 2
    p2: ['[ANSWER]\nassert rot(a = [1, 2, 3], k = 1) == [3, 1, 2, 6]\n[/ANSWER]', 'assert rot(a = [1, 2, 3], k = 1) == [3, 1, 2] + [6]'],
    // every answer holds the input call: none ran, pass@1 = 0
    p3: ['assert h(s = "abc") == h(s = "abc")'],
  };
  writeFileSync(join(dir, 'gens.json'), JSON.stringify(gens));
  const h = capturedIO(dir);
  const code = await main(
    ['eval', 'lcb-exec', '--data', 'execution.jsonl', '--generations', 'gens.json', '--out', 'scored.json', '--report', 'rep', '--workers', '1'],
    h.io,
  );
  assert.equal(code, 0, h.text().stderr);
  const scored = JSON.parse(readFileSync(join(dir, 'scored.json'), 'utf8')) as Record<string, boolean[]>;
  assert.deepEqual(scored, { p1: [true, false], p2: [true, true], p3: [false] });
  // (1/2 + 1 + 0) / 3 = 50.00
  assert.match(h.text().stdout, /pass@1: 50\.00\n/);
  assert.match(h.text().stdout, /easy: pass@1 50\.00/);
  assert.match(h.text().stdout, /medium: pass@1 100\.00/);
  assert.match(h.text().stdout, /hard: pass@1 0\.00/);
  const report = JSON.parse(readFileSync(join(dir, 'rep', 'report.json'), 'utf8')) as { examples: { id: string; answer: string }[] };
  assert.deepEqual(
    report.examples.map((e) => [e.id, e.answer]),
    [['p1', '3']],
  );
});

test('lcb-exec: problems without generations are a usage error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-lcb-bad-'));
  writeFileSync(join(dir, 'execution.json'), JSON.stringify(ROWS));
  writeFileSync(join(dir, 'gens.json'), JSON.stringify({ p1: ['2'] }));
  const h = capturedIO(dir);
  assert.equal(await main(['eval', 'lcb-exec', '--data', 'execution.json', '--generations', 'gens.json'], h.io), 2);
  assert.match(h.text().stderr, /no outputs for 2 problems \(first: p2\)/);
});
