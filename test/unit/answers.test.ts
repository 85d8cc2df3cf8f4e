// Answer extraction: the shared vectors (test/vectors/answers.json) that the
// Python parser also runs, plus the next-step JSON answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnswerFormatSchema, nextStepAnswers, parseAnswers, parseNextStep, splitTopLevelEq } from '../../src/engine/model/answers';

interface AnswerCase {
  name: string;
  format: string;
  text: string | null;
  expect: (string | null)[];
  questions?: { kind: string; var?: string }[];
  text_repeat?: { text: string; times: number };
  wrap?: [string, string];
}

const vectors = JSON.parse(readFileSync(join(__dirname, '..', 'vectors', 'answers.json'), 'utf8')) as {
  cases: AnswerCase[];
};

function textOf(c: AnswerCase): string {
  let t = c.text_repeat ? c.text_repeat.text.repeat(c.text_repeat.times) : (c.text ?? '');
  if (c.wrap) t = c.wrap[0] + t + c.wrap[1];
  return t;
}

function answersOf(c: AnswerCase): (string | null)[] {
  if (c.format === 'next_step_json') {
    const r = parseNextStep(textOf(c));
    return nextStepAnswers(r.ok ? r.value : undefined, c.questions ?? []);
  }
  return parseAnswers(c.format, textOf(c));
}

for (const c of vectors.cases) {
  test(`answers vector: ${c.name}`, () => {
    assert.deepEqual(answersOf(c), c.expect);
  });
}

test('every answer format has vectors', () => {
  const formats = new Set(vectors.cases.map((c) => c.format));
  for (const f of AnswerFormatSchema.options) assert.ok(formats.has(f), f);
});

test('a next-step answer keeps only its shape, and a wrong one says why', () => {
  const r = parseNextStep('{"next_line": 2.0, "extra": 1, "variables": [{"name": "x", "value": "1", "type": "int", "k": 0}]}');
  assert.deepEqual(r, { ok: true, value: { next_line: 2, variables: [{ name: 'x', value: '1', type: 'int' }] } });
  const wrong = parseNextStep('prose {"next_line": "four", "variables": []} {"a": 1}');
  assert.equal(wrong.ok, false);
  if (!wrong.ok) assert.match(wrong.error, /next_line/);
  const none = parseNextStep('no json {here');
  assert.deepEqual(none, { ok: false, error: 'no JSON object in the answer' });
});

test('the == scanner skips strings and brackets', () => {
  assert.equal(splitTopLevelEq(`assert f("a==b") == "x==y"`), 17);
  assert.equal(splitTopLevelEq(`x != y`), undefined);
  assert.equal(splitTopLevelEq(`[a == b]`), undefined);
});

test('next-step JSON is read from a fence and mapped onto questions', () => {
  const r = parseNextStep('```json\n{"next_line": 4, "variables": [{"name": "x", "value": "1", "type": "int"}]}\n```');
  assert.ok(r.ok);
  if (!r.ok) return;
  const qs = [{ kind: 'next_line' }, { kind: 'state', var: 'x' }, { kind: 'state', var: 'y' }];
  assert.deepEqual(nextStepAnswers(r.value, qs), ['4', '1; int', null]);
});

test('a next-step answer of the wrong shape is an error value, not a throw', () => {
  const r = parseNextStep('{"next_line": "four"}');
  assert.equal(r.ok, false);
  assert.deepEqual(nextStepAnswers(undefined, [{ kind: 'next_line' }]), [null]);
});

test('non-text input yields no answers', () => {
  assert.deepEqual(parseAnswers('execverify', undefined), []);
  assert.deepEqual(parseAnswers('execverify', 42), []);
});
