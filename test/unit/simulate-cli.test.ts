// `execverify simulate` end to end: the test server plays a model of known
// behaviour (right on chosen candidates, claiming a pass on others, talking
// nonsense on the rest); report.json's numbers must be exactly the ones that
// behaviour implies, computed here independently from outputs written by hand.
// With no endpoint the baseline runs the whole pipeline, labelled as such.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main';
import { parseProblems, type Problem } from '../../src/engine/simulate/problem';
import { ProgressLog, readProgress, settingsOf } from '../../src/engine/simulate/progress';
import { SimulateReportSchema, type SimulateReport } from '../../src/engine/simulate/report';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const SHIPPED = join(__dirname, '../../examples/problems/problems.jsonl');
const dir = mkdtempSync(join(tmpdir(), 'ev-simulate-'));
const all = parseProblems(readFileSync(SHIPPED, 'utf8'));
const chosen = ['sum-evens', 'a-plus-b', 'triangle'].map((id) => all.find((p) => p.id === id)!);
writeFileSync(join(dir, 'three.jsonl'), chosen.map((p) => JSON.stringify(p)).join('\n') + '\n');

/**
 * What each candidate really returns / prints on each public test, worked out
 * by hand from its code (null: the run does not finish — `two-lines` raises
 * ValueError: int() of the line '1 2').
 */
const REAL: Record<string, (string | null)[]> = {
  'sum-evens/right': ['6', '0'],
  'sum-evens/odd-instead': ['4', '0'],
  'sum-evens/positive-only': ['6', '0'],
  'a-plus-b/right': ['3\n'],
  'a-plus-b/two-lines': [null],
  'a-plus-b/difference': ['3\n'],
  'triangle/right': ['*\n**\n***\n'],
  'triangle/trailing-spaces': ['*   \n**   \n***   \n\n'],
  'triangle/one-short': ['*\n**\n'],
  'triangle/leading-space': [' *\n **\n ***\n'],
};
/** Hidden-test truth by hand: does the candidate pass every hidden test? */
const HIDDEN: Record<string, boolean> = {
  'sum-evens/right': true,
  'sum-evens/odd-instead': false,
  'sum-evens/positive-only': false,
  'a-plus-b/right': true,
  'a-plus-b/two-lines': false,
  'a-plus-b/difference': true,
  'triangle/right': true,
  'triangle/trailing-spaces': true,
  'triangle/one-short': false,
  'triangle/leading-space': false,
};
/** The model: `truth` predicts the real output, `claims-pass` the expected one, `nonsense` neither. */
type Behaviour = 'truth' | 'claims-pass' | 'nonsense';
const BEHAVIOUR: Record<string, Behaviour> = {
  'sum-evens/right': 'truth',
  'sum-evens/odd-instead': 'claims-pass',
  'sum-evens/positive-only': 'truth',
  'a-plus-b/right': 'nonsense',
  'a-plus-b/two-lines': 'truth',
  'a-plus-b/difference': 'truth',
  'triangle/right': 'truth',
  'triangle/trailing-spaces': 'truth',
  'triangle/one-short': 'claims-pass',
  'triangle/leading-space': 'nonsense',
};

/** The stdout rule, restated: CRLF = LF, trailing whitespace per line and trailing blank lines ignored. */
const norm = (s: string) =>
  s
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n+$/, '');
const same = (p: Problem, a: string, b: string) => (p.kind === 'script' ? norm(a) === norm(b) : a === b);
const expectedOf = (p: Problem, i: number) => p.public[i]!.expected;

/** Which candidate and which public test a prompt is about, from its text. */
function locate(prompt: string): { key: string; test: number } {
  const code = /\[PYTHON\]\n([\s\S]*?)\n\[\/PYTHON\]/.exec(prompt)![1]!;
  const call = /assert (.*) == \?\?/.exec(prompt)![1]!;
  for (const p of chosen) {
    const c = p.candidates.find((c) => c.code.replace(/\n$/, '') === code);
    if (!c) continue;
    const test = p.public.findIndex((t) => ('call' in t ? t.call : `output(${JSON.stringify(t.stdin)})`) === call);
    return { key: `${p.id}/${c.id}`, test };
  }
  throw new Error(`unknown prompt: ${prompt.slice(0, 200)}`);
}

function predicted(p: Problem, key: string, i: number): string {
  const b = BEHAVIOUR[key]!;
  if (b === 'claims-pass') return expectedOf(p, i);
  if (b === 'nonsense') return p.kind === 'script' ? 'nonsense\n' : '-999';
  return REAL[key]![i] ?? ''; // a run that stops early printed nothing here
}
const quote = (p: Problem, text: string) => (p.kind === 'script' ? JSON.stringify(text) : text);

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer({
    script: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const prompt = messages.at(-1)!.content;
      const { key, test } = locate(prompt);
      const p = chosen.find((x) => key.startsWith(`${x.id}/`))!;
      const call = /assert (.*) == \?\?/.exec(prompt)![1]!;
      return { text: `Let me trace it.\n[ANSWER]\nassert ${call} == ${quote(p, predicted(p, key, test))}\n[/ANSWER]` };
    },
  });
});
after(async () => server.close());

/** Runs the CLI; `stopWhen` aborts it (as Ctrl-C does) once stderr shows that text. */
async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return cliStopping(undefined, ...argv);
}

async function cliStopping(stopWhen: string | undefined, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const controller = new AbortController();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => {
    err += c;
    if (stopWhen && err.includes(stopWhen)) controller.abort();
  });
  const env = { ...process.env, EXECVERIFY_BASE_URL: '', EXECVERIFY_MODEL: '' };
  const code = await main(argv, { stdout, stderr, env, cwd: dir, signal: controller.signal });
  return { code, out, err };
}

function readReport(out: string): SimulateReport {
  return SimulateReportSchema.parse(JSON.parse(readFileSync(join(dir, out, 'report.json'), 'utf8')));
}

test('a scripted model: report.json holds exactly the numbers its behaviour implies', async () => {
  const r = await cli('simulate', '--problems', 'three.jsonl', '--out', 'scripted', '--base-url', server.url, '--model', 'test-model', '--no-cache');
  assert.equal(r.code, 0, r.err);
  const report = readReport('scripted');
  assert.equal(report.provider.kind, 'model');

  // Independently: per candidate, what simulation and the real runs say.
  const expectedFacts = chosen.map((p) =>
    p.candidates.map((c) => {
      const key = `${p.id}/${c.id}`;
      const real = REAL[key]!;
      return {
        key,
        simulated: p.public.every((_t, i) => same(p, predicted(p, key, i), expectedOf(p, i))),
        realPublic: real.every((out, i) => out !== null && same(p, out, expectedOf(p, i))),
        realHidden: HIDDEN[key]!,
        right: real.map((out, i) => (out === null ? null : same(p, predicted(p, key, i), out))),
      };
    }),
  );
  const got = report.problems.map((p) =>
    p.candidates.map((c) => ({
      key: `${p.id}/${c.id}`,
      simulated: c.simulated_public,
      realPublic: c.real_public,
      realHidden: c.real_hidden,
      right: c.predictions.map((x) => x.prediction_right),
    })),
  );
  assert.deepEqual(got, expectedFacts);

  // Selection by hand: uniform over the accepted (none → all), the passing (none → all), or all.
  type F = (typeof expectedFacts)[number][number];
  const solved = (c: F) => c.realPublic && c.realHidden;
  const share = (cs: F[]) => cs.filter(solved).length / cs.length;
  const pick = (cs: F[], keep: (c: F) => boolean) => (cs.some(keep) ? share(cs.filter(keep)) : share(cs));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const random = mean(expectedFacts.map(share));
  const simulated = mean(expectedFacts.map((cs) => pick(cs, (c) => c.simulated)));
  const oracle = mean(expectedFacts.map((cs) => pick(cs, (c) => c.realPublic)));
  const flat = expectedFacts.flat();
  const passing = flat.filter((c) => c.realPublic);
  const failing = flat.filter((c) => !c.realPublic);
  const rights = flat.flatMap((c) => c.right).filter((x) => x !== null);
  const s = report.summary;
  const close = (a: number | null, b: number, what: string) => assert.ok(a !== null && Math.abs(a - b) < 1e-12, `${what}: ${a} != ${b}`);
  close(s.pass_at_1.random, random, 'random');
  close(s.pass_at_1.simulated, simulated, 'simulated');
  close(s.pass_at_1.oracle, oracle, 'oracle');
  close(s.gap, oracle - simulated, 'gap');
  close(s.correct_rejected, passing.filter((c) => !c.simulated).length / passing.length, 'correct_rejected');
  close(s.wrong_accepted, failing.filter((c) => c.simulated).length / failing.length, 'wrong_accepted');
  close(s.prediction_accuracy, rights.filter(Boolean).length / rights.length, 'prediction_accuracy');
  // The behaviour was chosen so that no number is 0 or 1 by accident; the arithmetic once more by hand:
  // random (1/3 + 2/3 + 2/4) / 3, simulated (1/3 + 1/1 + 2/3) / 3, oracle (1/2 + 2/2 + 2/2) / 3.
  assert.deepEqual(
    [random, simulated, oracle].map((x) => x.toFixed(6)),
    ['0.500000', '0.666667', '0.833333'],
  );
  assert.equal(s.predictions, 13); // 3 candidates × 2 public tests + 3 × 1 + 4 × 1
  assert.equal(s.model_errors, 0);
  assert.equal(server.requests.filter((q) => q.path.endsWith('/chat/completions')).length, 13); // one request a prediction
  assert.match(readFileSync(join(dir, 'scripted', 'report.md'), 'utf8'), /\| oracle \(real public-test runs\) \| 83\.3% \|/);
  assert.match(r.out, /pass@1 {2}random 50\.0% {2}simulated 66\.7% {2}oracle 83\.3% {2}gap 16\.7 points/);
  // The charts page of the evaluation report module: the same numbers, its bars, the wrong predictions; no network.
  const html = readFileSync(join(dir, 'scripted', 'report.html'), 'utf8');
  const charts = JSON.parse(/<script type="application\/json" id="report-charts">([\s\S]*?)<\/script>/.exec(html)![1]!) as {
    id: string;
    spec: { data: { values: { label: string; n: number; correct: number }[] } };
  }[];
  assert.deepEqual(
    charts[0]!.spec.data.values.map((v) => [v.label, v.correct, v.n]),
    [
      ['really pass: accepted', 5, 6],
      ['really fail: rejected', 2, 4],
    ],
  );
  assert.match(html, /pass@1 oracle/);
  assert.match(html, /sum-evens\/odd-instead\/public\/0/); // a wrong prediction, listed
  assert.doesNotMatch(html, /<script[^>]+src=/);
});

test('with no endpoint the baseline runs the whole pipeline, labelled as the baseline', async () => {
  const r = await cli('simulate', '--problems', SHIPPED, '--out', 'baseline', '--k', '2', '--quiet');
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /No model endpoint is configured/);
  assert.match(r.out, /^provider: baseline \(trivial answers, not a model\)\n/);
  const report = readReport('baseline');
  assert.deepEqual(report.provider, { kind: 'baseline', label: 'baseline' });
  assert.equal(report.k, 2);
  assert.equal(report.problems.length, all.length);
  assert.deepEqual(report.errors, []);
  for (const p of report.problems) {
    assert.equal(p.candidates.length, 2);
    // The real verdicts are the labelled ones; the baseline's "None" never matches an expected output here.
    for (const c of p.candidates) {
      assert.deepEqual({ public: c.real_public, hidden: c.real_hidden }, c.label, `${p.id}/${c.id}`);
      assert.equal(c.simulated_public, false);
    }
  }
  // Nothing accepted → the simulated rule falls back to random.
  assert.equal(report.summary.pass_at_1.simulated, report.summary.pass_at_1.random);
  assert.equal(report.summary.correct_rejected, 1);
  assert.equal(report.summary.wrong_accepted, 0);
  assert.match(
    readFileSync(join(dir, 'baseline', 'report.md'), 'utf8'),
    /^# Self-execution simulation\n\nPredictions by baseline \(trivial answers, not a model\)/,
  );
});

test('bad invocations and problem files are one clear line on stderr', async () => {
  writeFileSync(join(dir, 'bad.jsonl'), '{"id": "x", "kind": "function"}\n');
  const cases: [string[], number, RegExp][] = [
    [['simulate', '--out', 'x'], 2, /^execverify simulate: missing --problems FILE/],
    [['simulate', '--problems', 'three.jsonl'], 2, /^execverify simulate: missing --out DIR/],
    [['simulate', '--problems', 'nope.jsonl', '--out', 'x'], 1, /^execverify simulate: cannot read nope\.jsonl: no such file$/],
    [['simulate', '--problems', 'bad.jsonl', '--out', 'x'], 1, /^execverify simulate: bad\.jsonl:1: statement: Required/],
    [['simulate', '--problems', 'three.jsonl', '--out', 'x', '--k', '0'], 2, /--k needs an integer ≥ 1, got '0'/],
  ];
  for (const [argv, code, err] of cases) {
    const r = await cli(...argv);
    assert.equal(r.code, code, argv.join(' '));
    assert.match(
      r.err
        .split('\n')
        .filter((l) => !/^(No model|To ask|  |or$|or pass)/.test(l) && l)
        .join('\n'),
      err,
    );
    assert.equal(r.out, '');
  }
});

test('a problem whose expected value is not a value is reported, the others still count', async () => {
  const broken = { ...chosen[0]!, id: 'broken', public: [{ call: 'sum_evens([2])', expected: 'undefined_name' }] };
  writeFileSync(join(dir, 'mixed.jsonl'), [JSON.stringify(broken), JSON.stringify(chosen[1])].join('\n'));
  const r = await cli('simulate', '--problems', 'mixed.jsonl', '--out', 'mixed', '--quiet');
  assert.equal(r.code, 0, r.err);
  const report = readReport('mixed');
  assert.deepEqual(
    report.problems.map((p) => p.id),
    ['a-plus-b'],
  );
  assert.equal(report.errors.length, 1);
  assert.match(report.errors[0]!.message, /public test 0: expected undefined_name is not a Python value/);
});

test('a killed run resumes: finished problems are not asked or run again, and the report is the same', async () => {
  const args = ['simulate', '--problems', 'three.jsonl', '--out', 'resumed', '--base-url', server.url, '--model', 'test-model', '--no-cache'];
  const killed = await cliStopping('simulate: 2/3', ...args);
  assert.equal(killed.code, 130, killed.err);
  assert.match(killed.err, /execverify simulate: cancelled/);
  const before = server.requests.length;
  const again = await cli(...args);
  assert.equal(again.code, 0, again.err);
  assert.match(again.err, /simulate: resuming, 2 of 3 problems already done/);
  assert.equal(server.requests.length - before, 4); // only triangle's 4 candidates × 1 public test
  const fresh = await cli(
    'simulate',
    '--problems',
    'three.jsonl',
    '--out',
    'fresh',
    '--base-url',
    server.url,
    '--model',
    'test-model',
    '--no-cache',
    '--quiet',
  );
  assert.equal(fresh.code, 0, fresh.err);
  assert.deepEqual(readReport('resumed'), readReport('fresh'));
  // Other settings do not reuse the progress.
  const other = await cli(...args, '--k', '2');
  assert.match(other.err, /progress\.jsonl is from a run with other settings: starting over/);
  assert.equal(readReport('resumed').k, 2);
});

test('a progress line a kill cut short is dropped, and the file is written anew without it', () => {
  const file = join(dir, 'torn.jsonl');
  const settings = settingsOf('x', { k: null, turns: 0, provider: 'baseline', templates: [] });
  const report = readReport('fresh');
  const log = new ProgressLog(file, settings);
  log.add({ problem: report.problems[0]! });
  log.add({ error: { problem: 'p2', message: 'bad' } });
  log.close();
  writeFileSync(file, readFileSync(file, 'utf8') + '{"problem": {"id": "trian');
  const { done, stale } = readProgress(file, settings);
  assert.equal(stale, false);
  assert.deepEqual([...done.keys()], [report.problems[0]!.id, 'p2']);
  new ProgressLog(file, settings, done.values()).close();
  assert.equal(readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 3);
  assert.equal(readProgress(file, { ...settings, k: 3 }).stale, true);
});

test('a model server that refuses every request: each prediction records the error, the report is written, exit 1', async () => {
  const refusing = await startOpenAIServer({
    script: () => ({ status: 400, json: { error: { message: 'context too long', type: 'invalid_request_error' } } }),
  });
  try {
    const r = await cli('simulate', '--problems', 'three.jsonl', '--out', 'refused', '--base-url', refusing.url, '--model', 'm', '--no-cache', '--quiet');
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /execverify simulate: every model request failed \(.*context too long.*\); the report holds the real runs only\n$/);
    const report = readReport('refused');
    assert.equal(report.summary.model_errors, 13);
    const preds = report.problems.flatMap((p) => p.candidates.flatMap((c) => c.predictions));
    assert.ok(preds.every((p) => p.error !== undefined && /context too long/.test(p.error) && !p.simulated_pass && p.answer === null));
    assert.equal(report.summary.pass_at_1.simulated, report.summary.pass_at_1.random);
    assert.match(r.out, /\(13 requests failed\)/);
  } finally {
    await refusing.close();
  }
});
