// The shared vectors (test/vectors/judge.json, rewards.json, cruxeval.json)
// through the real Python worker: the verdicts must be exactly the ones the
// Python tests check, so the editor, the CLI and the trainers agree.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TracerPool } from '../../src/engine/trace/runner';
import { JudgeClient, passAtK, type JudgeItem } from '../../src/engine/judge/client';
import type { QuestionKind } from '../../src/engine/questions/schema';
import { GroundTruthSchema } from '../../src/engine/judge/schema';

const VECTORS = join(__dirname, '..', 'vectors');
const load = <T>(name: string): T => JSON.parse(readFileSync(join(VECTORS, name), 'utf8')) as T;

interface JudgeCase {
  name: string;
  kind: string;
  answer: string | null;
  answer_repeat?: { text: string; times: number };
  truth: unknown;
  options?: Record<string, unknown>;
  expect: { correct: boolean; reason?: string };
}
interface RewardCase {
  name: string;
  truth: unknown;
  response: string | null;
  response_repeat?: { text: string; times: number };
  options?: Record<string, unknown>;
  error?: boolean;
  expect: { reward: number; r_io: number | null; r_white: number | null; gated: string | null; verdicts?: boolean[] };
}
interface CruxCase {
  name: string;
  mode: 'input' | 'output';
  code: string;
  input: string;
  output: string;
  generations: string[];
  expect: boolean[];
  timeout_s?: number;
}

let pool: TracerPool;
let judge: JudgeClient;
before(() => {
  pool = new TracerPool({ size: 1 });
  judge = new JudgeClient(pool);
});
after(() => pool.close());

test('judge vectors: the worker gives every verdict the Python tests expect', async () => {
  const { cases } = load<{ cases: JudgeCase[] }>('judge.json');
  const items: JudgeItem[] = cases.map((c) => ({
    kind: c.kind as QuestionKind,
    answer: c.answer_repeat ? c.answer_repeat.text.repeat(c.answer_repeat.times) : c.answer,
    truth: c.truth,
    ...(c.options ? { options: c.options } : {}),
  }));
  const verdicts = await judge.judgeBatch(items);
  const mismatches = cases.flatMap((c, i) => {
    const v = verdicts[i]!;
    const ok = v.correct === c.expect.correct && (c.expect.reason === undefined || v.reason === c.expect.reason);
    return ok ? [] : [`${c.name}: got ${JSON.stringify(v)}, want ${JSON.stringify(c.expect)}`];
  });
  assert.deepEqual(mismatches, []);
  assert.equal(existsSync('/tmp/execverify-pwned'), false, 'an adversarial answer wrote a file');
});

test('judge op: one answer, same verdict as in the batch', async () => {
  const v = await judge.judge({ kind: 'state', answer: '[1, 2]; List[int]', truth: { repr: '[1, 2]', type: 'list', literal: true } });
  assert.equal(v.correct, true);
  assert.equal(v.type_ok, true);
});

test('reward vectors: R, R_IO, R_white and gating match the Python reward module', async () => {
  const { cases } = load<{ cases: RewardCase[] }>('rewards.json');
  for (const c of cases) {
    const response = c.response_repeat ? c.response_repeat.text.repeat(c.response_repeat.times) : (c.response ?? '');
    const got = await judge.reward(c.truth as never, response, c.options as never);
    assert.ok(Math.abs(got.reward - c.expect.reward) < 1e-9, `${c.name}: reward ${got.reward}`);
    if (c.expect.r_io === null) assert.equal(got.r_io, null, c.name);
    else assert.ok(Math.abs((got.r_io ?? NaN) - c.expect.r_io) < 1e-9, `${c.name}: r_io ${got.r_io}`);
    if (c.expect.r_white === null) assert.equal(got.r_white, null, c.name);
    else assert.ok(Math.abs((got.r_white ?? NaN) - c.expect.r_white) < 1e-9, `${c.name}: r_white ${got.r_white}`);
    if (c.error) {
      assert.ok(got.error, c.name);
      continue;
    }
    assert.equal(got.gated ?? null, c.expect.gated, c.name);
    if (c.expect.verdicts)
      assert.deepEqual(
        got.breakdown.map((b) => b.verdict.correct),
        c.expect.verdicts,
        c.name,
      );
  }
});

test('every well-formed ground truth in the reward vectors matches GroundTruthSchema', () => {
  const { cases } = load<{ cases: RewardCase[] }>('rewards.json');
  for (const c of cases.filter((x) => !x.error)) {
    const parsed = GroundTruthSchema.safeParse(c.truth);
    assert.ok(parsed.success, `${c.name}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues[0])}`);
  }
});

test('cruxeval vectors: official rules through the worker, pass@k in TypeScript', async () => {
  const v = load<{ samples: CruxCase[]; pass_at_k: { n: number; c: number; k: number; expect: number }[] }>('cruxeval.json');
  for (const s of v.samples) {
    const [row] = await judge.cruxevalScore([s], s.mode, s.timeout_s ? { timeoutS: s.timeout_s } : {});
    assert.deepEqual(
      row!.map((x) => x.correct),
      s.expect,
      s.name,
    );
  }
  for (const p of v.pass_at_k) assert.ok(Math.abs(passAtK(p.n, p.c, p.k) - p.expect) < 1e-12, JSON.stringify(p));
});

test('eval_expr op: typed and official evaluation, contained when hostile', async () => {
  const got = await judge.evalExpr(
    [
      { mode: 'typed', answer: 'f(2)', code: 'def f(x):\n    return [x] * 2', value: { repr: '[2, 2]', type: 'list', literal: true } },
      { mode: 'official', answer: 'f(1)', code: 'def f(x):\n    return x + 1', expected: '2' },
      { mode: 'official', answer: '3', code: 'def f(x):\n    return x + 1', expected: '2' },
      { mode: 'typed', answer: "__import__('socket').socket().connect(('127.0.0.1', 9))", value: { repr: 'None', type: 'NoneType', literal: true } },
      { mode: 'typed', answer: 'sum(__import__("itertools").count())', value: { repr: '0', type: 'int', literal: true }, timeout_s: 0.3 },
    ],
    1,
  );
  assert.deepEqual(
    got.map((v) => v.correct),
    [true, true, false, false, false],
  );
  assert.deepEqual(
    got.slice(2).map((v) => v.reason),
    ['assert_failed', 'sandbox_refused', 'time_limit'],
  );
});
