// The problem format and the real verdicts: every candidate of the shipped
// problem set (examples/problems) really run on its public and hidden tests
// under the tracer and judged; real_public / real_hidden must equal what its
// author labelled. Bad problem files are refused with their line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JudgeClient } from '../../src/engine/judge/client';
import { resolvePython } from '../../src/engine/python';
import { ProblemFileError, parseProblems } from '../../src/engine/simulate/problem';
import { runPrograms } from '../../src/engine/simulate/real';
import { TracerPool } from '../../src/engine/trace/runner';

const FILE = join(__dirname, '../../examples/problems/problems.jsonl');

test('the shipped problem set: a few dozen problems of both shapes, with right and wrong candidates', () => {
  const problems = parseProblems(readFileSync(FILE, 'utf8'), FILE);
  const kinds = problems.map((p) => p.kind);
  assert.ok(problems.length >= 24, `${problems.length} problems`);
  assert.ok(kinds.filter((k) => k === 'function').length >= 10 && kinds.filter((k) => k === 'script').length >= 10);
  const labels = problems.flatMap((p) => p.candidates.map((c) => c.label));
  assert.ok(
    labels.every((l) => l !== undefined),
    'every shipped candidate is labelled',
  );
  // All three kinds of candidate: right, wrong on public tests, right on public but wrong on hidden ones.
  assert.ok(labels.some((l) => l!.public && l!.hidden));
  assert.ok(labels.some((l) => !l!.public));
  assert.ok(labels.some((l) => l!.public && !l!.hidden));
});

test('real_public and real_hidden of every shipped candidate are what its label says', async () => {
  const problems = parseProblems(readFileSync(FILE, 'utf8'), FILE);
  const pool = new TracerPool({ python: resolvePython(undefined, process.env), size: 2, env: process.env });
  try {
    const judge = new JudgeClient(pool);
    const wrong: string[] = [];
    for (const problem of problems) {
      const runs = await runPrograms(pool, judge, problem, problem.candidates);
      runs.forEach((r, i) => {
        const label = problem.candidates[i]!.label!;
        if (r.realPublic !== label.public || r.realHidden !== label.hidden) {
          wrong.push(
            `${problem.id}/${r.candidate}: real ${r.realPublic}/${r.realHidden}, labelled ${label.public}/${label.hidden} (${JSON.stringify(r.tests.map((t) => t.actual))})`,
          );
        }
      });
    }
    assert.deepEqual(wrong, []);
  } finally {
    await pool.close();
  }
});

test('a script test passes under the whitespace rule, not with different leading space', async () => {
  const [problem] = parseProblems(
    JSON.stringify({
      id: 'ws',
      kind: 'script',
      statement: 'print n stars',
      public: [{ stdin: '2\n', expected: '*\n**\n' }],
      hidden: [],
      candidates: [
        { id: 'exact', code: 'n = int(input())\nfor i in range(n):\n    print("*" * (i + 1))\n' },
        { id: 'trailing', code: 'n = int(input())\nfor i in range(n):\n    print("*" * (i + 1) + "  ")\nprint()\nprint()\n' },
        { id: 'crlf', code: 'import sys\nn = int(input())\nfor i in range(n):\n    sys.stdout.write("*" * (i + 1) + "\\r\\n")\n' },
        { id: 'leading', code: 'n = int(input())\nfor i in range(n):\n    print(" " + "*" * (i + 1))\n' },
        { id: 'exit-1', code: 'import sys\nprint("*")\nprint("**")\nsys.exit(1)\n' },
      ],
    }),
  );
  const pool = new TracerPool({ python: resolvePython(undefined, process.env), size: 1, env: process.env });
  try {
    const runs = await runPrograms(pool, new JudgeClient(pool), problem!, problem!.candidates);
    assert.deepEqual(
      runs.map((r) => [r.candidate, r.realPublic]),
      [
        ['exact', true],
        ['trailing', true],
        ['crlf', true],
        ['leading', false],
        ['exit-1', false],
      ],
    );
    assert.equal(runs[1]!.tests[0]!.actual, '*  \n**  \n\n\n'); // what it printed, as printed
  } finally {
    await pool.close();
  }
});

test('bad problem files are refused with the line and what is wrong', () => {
  const ok = { id: 'p', kind: 'function', statement: '', public: [{ call: 'f()', expected: '1' }], hidden: [], candidates: [{ id: 'a', code: '' }] };
  const err = (text: string) => {
    try {
      parseProblems(text, 'f.jsonl');
    } catch (e) {
      assert.ok(e instanceof ProblemFileError);
      return e.message;
    }
    assert.fail('accepted');
  };
  assert.match(err(`${JSON.stringify(ok)}\n{`), /^f\.jsonl:2: not JSON/);
  assert.match(err(JSON.stringify({ ...ok, public: [] })), /^f\.jsonl:1: public: Array must contain at least 1/);
  assert.match(err(JSON.stringify({ ...ok, public: [{ stdin: '', expected: '' }] })), /^f\.jsonl:1: public\.0/);
  assert.match(err(JSON.stringify({ ...ok, candidates: [ok.candidates[0], ok.candidates[0]] })), /candidate id 'a' appears twice/);
  assert.match(err(`${JSON.stringify(ok)}\n\n${JSON.stringify(ok)}`), /^f\.jsonl:3: problem id 'p' appears twice/);
  assert.match(err(JSON.stringify({ ...ok, id: '../x' })), /^f\.jsonl:1: id: letters, digits/);
  assert.match(err('\n\n'), /no problems/);
});
