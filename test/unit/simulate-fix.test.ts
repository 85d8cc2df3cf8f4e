// Self-fixing (`execverify simulate --turns T`) against a scripted model: the
// test server predicts like a model of known behaviour and, asked for a fix,
// answers by the program it is shown. Every program it writes is really run
// (hidden tests included); the per-turn fixed / broken / unchanged counts under
// simulated and real feedback must be the ones worked out here by hand.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedProgram } from '../../src/engine/simulate/fix';
import { parseProblems } from '../../src/engine/simulate/problem';
import { SimulateReportSchema } from '../../src/engine/simulate/report';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { noModelEnv, runCli } from '../support/cli';

const dir = mkdtempSync(join(tmpdir(), 'ev-simfix-'));
const all = parseProblems(readFileSync(join(__dirname, '../../examples/problems/problems.jsonl'), 'utf8'));
const chosen = ['sum-evens', 'a-plus-b'].map((id) => all.find((p) => p.id === id)!);
writeFileSync(join(dir, 'two.jsonl'), chosen.map((p) => JSON.stringify(p)).join('\n') + '\n');
const code = (key: string) => {
  const [pid, cid] = key.split('/');
  return chosen.find((p) => p.id === pid)!.candidates.find((c) => c.id === cid)!.code;
};

/** Predictions: `truth` (the real output, by hand), or `nonsense`. */
const PREDICT: Record<string, string[] | 'nonsense'> = {
  'sum-evens/right': 'nonsense',
  'sum-evens/odd-instead': ['4', '0'],
  'sum-evens/positive-only': ['6', '0'],
  'a-plus-b/right': 'nonsense',
  'a-plus-b/two-lines': ['""'], // int(input()) of '1 2' raises ValueError before it prints
  'a-plus-b/difference': ['"3\\n"'],
};
/** Asked to fix the program of KEY, the model answers with the program of the value (null: prose, no program). */
const FIX: Record<string, string | null> = {
  'sum-evens/right': null,
  'sum-evens/odd-instead': 'sum-evens/positive-only',
  'a-plus-b/right': 'a-plus-b/two-lines',
  'a-plus-b/two-lines': 'a-plus-b/right',
};

function keyOf(program: string): string {
  for (const p of chosen) for (const c of p.candidates) if (c.code.replace(/\n$/, '') === program.replace(/\n$/, '')) return `${p.id}/${c.id}`;
  throw new Error(`unknown program:\n${program}`);
}

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer({
    script: (req) => {
      const prompt = ((req.body?.messages ?? []) as { content: string }[]).at(-1)!.content;
      if (prompt.includes('Write the corrected program')) {
        const shown = /```python\n([\s\S]*?)\n```/.exec(prompt)![1]!;
        const to = FIX[keyOf(shown)];
        return { text: to ? `Here it is.\n\`\`\`python\n${code(to)}\`\`\`\n` : 'I am not sure what is wrong.' };
      }
      const key = keyOf(/\[PYTHON\]\n([\s\S]*?)\n\[\/PYTHON\]/.exec(prompt)![1]!);
      const call = /assert (.*) == \?\?/.exec(prompt)![1]!;
      const p = chosen.find((x) => key.startsWith(`${x.id}/`))!;
      const i = p.public.findIndex((t) => ('call' in t ? t.call : `output(${JSON.stringify(t.stdin)})`) === call);
      const said = PREDICT[key] === 'nonsense' ? (p.kind === 'script' ? '"nonsense"' : '-999') : PREDICT[key]![i]!;
      return { text: `[ANSWER]\nassert ${call} == ${said}\n[/ANSWER]` };
    },
  });
});
after(async () => server.close());

const cli = (...argv: string[]) => runCli(argv, { cwd: dir, env: noModelEnv() });

test('fixing with simulated and with real feedback: per turn fixed, broken, unchanged as worked out by hand', async () => {
  const r = await cli('simulate', '--problems', 'two.jsonl', '--out', 'fix', '--turns', '2', '--base-url', server.url, '--model', 'm', '--no-cache', '--quiet');
  assert.equal(r.code, 0, r.err);
  const report = SimulateReportSchema.parse(JSON.parse(readFileSync(join(dir, 'fix', 'report.json'), 'utf8')));
  assert.equal(report.turns, 2);
  const turns = (kind: 'simulated' | 'real') =>
    Object.fromEntries(
      report.problems.flatMap((p) =>
        p.candidates
          .filter((c) => c.fixing)
          .map((c) => [
            `${p.id}/${c.id}`,
            c.fixing![kind].map((t) => [t.code === null ? null : keyOf(t.code), t.simulated_public, t.real_public, t.real_hidden]),
          ]),
      ),
    );
  // Started from: the candidates the simulation says fail a public test (right ones answered with nonsense included).
  // Simulated feedback goes on while the simulation finds a failure; the nonsense-predicted right a-plus-b never passes it.
  assert.deepEqual(turns('simulated'), {
    'sum-evens/right': [
      [null, false, true, true],
      [null, false, true, true],
    ],
    'sum-evens/odd-instead': [['sum-evens/positive-only', true, true, false]],
    'a-plus-b/right': [
      ['a-plus-b/two-lines', false, false, false],
      ['a-plus-b/right', false, true, true],
    ],
    'a-plus-b/two-lines': [
      ['a-plus-b/right', false, true, true],
      ['a-plus-b/two-lines', false, false, false],
    ],
  });
  // Real feedback stops as soon as the real public tests pass: right candidates are never touched.
  assert.deepEqual(turns('real'), {
    'sum-evens/right': [],
    'sum-evens/odd-instead': [['sum-evens/positive-only', true, true, false]],
    'a-plus-b/right': [],
    'a-plus-b/two-lines': [['a-plus-b/right', false, true, true]],
  });
  assert.deepEqual(report.summary.fixing, {
    simulated: [
      { turn: 1, fixed: 1, broken: 1, unchanged: 2 },
      { turn: 2, fixed: 0, broken: 0, unchanged: 4 },
    ],
    real: [
      { turn: 1, fixed: 1, broken: 0, unchanged: 3 },
      { turn: 2, fixed: 1, broken: 0, unchanged: 3 },
    ],
  });
  assert.match(r.out, /fixing after 2 turns: simulated feedback fixed 0, broke 0, left 4; real feedback fixed 1, broke 0, left 3\n/);

  // The feedback shown: the model's own prediction (simulated) or the actual outcome (real).
  const fixPrompts = server.requests
    .map((q) => ((q.body?.messages ?? []) as { content: string }[]).at(-1)?.content ?? '')
    .filter((t) => t.includes('Write the corrected program'));
  assert.ok(fixPrompts.some((t) => t.includes('Simulating it on the public tests gives:\n- output("1 2\\n") should print "3\\n", but it prints: "nonsense"')));
  assert.ok(
    fixPrompts.some((t) =>
      t.includes(
        'Running it on the public tests gave:\n- output("1 2\\n") should print "3\\n", but the run ended with: raised ValueError: invalid literal for int() with base 10: \'1 2\'',
      ),
    ),
  );
  assert.ok(fixPrompts.some((t) => t.includes('- sum_evens([1, 2, 3, 4]) should return 6, but it returned: 4')));
  assert.match(readFileSync(join(dir, 'fix', 'report.md'), 'utf8'), /## Self-fixing\n\n\| turn \| feedback \| fixed \| broken \| unchanged \|/);
});

test('the baseline fixes nothing, and says so', async () => {
  const r = await cli('simulate', '--problems', 'two.jsonl', '--out', 'basefix', '--turns', '2', '--quiet');
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /--turns: the baseline writes no programs, so nothing is fixed/);
  const report = SimulateReportSchema.parse(JSON.parse(readFileSync(join(dir, 'basefix', 'report.json'), 'utf8')));
  assert.equal(report.turns, 0);
  assert.equal(report.summary.fixing, undefined);
});

test('the fixed program is the last python block of the reply', () => {
  assert.equal(fixedProgram('x\n```python\na = 1\n```\nthen\n```py\nb = 2\n```\n'), 'b = 2\n');
  assert.equal(fixedProgram('```\nprint(1)\n```'), 'print(1)\n');
  assert.equal(fixedProgram('```text\nnot code\n```'), null);
  assert.equal(fixedProgram('no code at all'), null);
  assert.equal(fixedProgram('```python\n\n```'), null);
});
