// `execverify eval reval` on a five-program subset of REval (test/fixtures/reval):
// REval's ground-truth answers score 100%, a model of known accuracy scores
// exactly that per task, the shared vectors get their verdicts through the
// worker, and user errors exit 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { JudgeClient, type RevalItem } from '../../src/engine/judge/client';
import { resolvePython } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { loadReval, probesOf, revalJob } from '../../src/engine/eval/reval';
import { revalPrompt } from '../../src/engine/eval/reval-ask';
import { ReportSchema } from '../../src/engine/report';
import { startOpenAIServer } from '../support/openai-server';
import { capturedIO } from '../support/cli';

const FIXTURE = join(__dirname, '..', 'fixtures', 'reval');
const VECTORS = join(__dirname, '..', 'vectors', 'reval.json');

type Verdicts = Record<string, { correct: boolean; defined: boolean; reason: string }>;

async function run(args: string[], cwd: string) {
  const h = capturedIO(cwd);
  const code = await main(['eval', 'reval', '--data', FIXTURE, '--workers', '2', ...args], h.io);
  return { code, ...h.text() };
}

/** The reference answers once per file: the traces are the slow part. */
let reference: { dir: string; answers: Record<string, string> } | undefined;
async function referenceAnswers() {
  if (!reference) {
    const dir = mkdtempSync(join(tmpdir(), 'ev-reval-'));
    const r = await run(['--write-reference', 'ref.json', '--out', 'ref-verdicts.json'], dir);
    assert.equal(r.code, 0, r.stderr);
    reference = { dir, answers: JSON.parse(readFileSync(join(dir, 'ref.json'), 'utf8')) as Record<string, string> };
  }
  return reference;
}

const taskOf = (key: string) => key.split('/')[3]!;

test('REval ground-truth answers score 100% on every well-defined probe of the subset', async () => {
  const { dir, answers } = await referenceAnswers();
  // 5 programs, 22 inputs, 72 probes per task + 22 outputs (counted from the fixture's task file).
  const tasks = readFileSync(join(FIXTURE, 'data', 'DREval_tasks.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { tasks: { task: unknown[] }[] });
  const inputs = tasks.reduce((n, t) => n + t.tasks.length, 0);
  const probes = tasks.reduce((n, t) => n + t.tasks.reduce((m, p) => m + p.task.length, 0), 0);
  assert.equal(Object.keys(answers).length, 3 * probes + inputs);
  const verdicts = JSON.parse(readFileSync(join(dir, 'ref-verdicts.json'), 'utf8')) as Verdicts;
  const defined = Object.entries(verdicts).filter(([, v]) => v.defined);
  assert.equal(defined.length, Object.keys(verdicts).length, 'every probe of the subset is well defined');
  for (const [key, v] of defined) assert.ok(v.correct, `${key}: ${v.reason} for ${answers[key]}`);
  // ClassEval's output answers are its own test code: they pass only when run after setUp (DREval/96).
  assert.ok(verdicts['DREval/96/0/output/0']?.correct);
});

test('a model of known accuracy scores exactly that accuracy on each task', async () => {
  const { dir, answers } = await referenceAnswers();
  const wrong: Record<string, string> = {
    coverage: '', // set per key below: the other of YES / NO
    state: '',
    path: '[ANSWER]\nno_such_line()\n[/ANSWER]',
    output: '[ANSWER]\nassert False\n[/ANSWER]',
  };
  const keys = Object.keys(answers).sort();
  const model: Record<string, string> = {};
  const right: Record<string, number> = { coverage: 0, state: 0, path: 0, output: 0 };
  const total: Record<string, number> = { coverage: 0, state: 0, path: 0, output: 0 };
  keys.forEach((key, i) => {
    const task = taskOf(key);
    const ok = i % 3 !== 0; // two answers in three are right
    total[task]!++;
    if (ok) right[task]!++;
    const ref = answers[key]!;
    if (ok) model[key] = ref;
    else if (task === 'coverage') model[key] = ref.includes('YES') ? '[ANSWER]\nNO\n[/ANSWER]' : '[ANSWER]\nYES\n[/ANSWER]';
    else if (task === 'state') model[key] = ref.includes('\nNil\n') ? '[ANSWER]\n987654321; int\n[/ANSWER]' : '[ANSWER]\nNil\n[/ANSWER]';
    else model[key] = wrong[task]!;
  });
  writeFileSync(join(dir, 'model.json'), JSON.stringify(model));
  const r = await run(['--generations', 'model.json', '--out', 'model-verdicts.json'], dir);
  assert.equal(r.code, 0, r.stderr);
  const verdicts = JSON.parse(readFileSync(join(dir, 'model-verdicts.json'), 'utf8')) as Verdicts;
  for (const task of ['coverage', 'state', 'path', 'output']) {
    const got = Object.entries(verdicts).filter(([k, v]) => taskOf(k) === task && v.correct).length;
    assert.equal(got, right[task], task);
    const pct = ((100 * right[task]!) / total[task]!).toFixed(2);
    assert.match(r.stdout, new RegExp(`${task}${task === 'coverage' ? ' acc' : ''} ${pct.replace('.', '\\.')} `), `${task} accuracy ${pct} in: ${r.stdout}`);
  }
});

test('strict mode keeps our rules: ambiguous line text is wrong there, right under REval rules', async () => {
  const { dir } = await referenceAnswers();
  const r = await run(['--generations', 'ref.json', '--mode', 'strict', '--out', 'strict.json'], dir);
  assert.equal(r.code, 0, r.stderr);
  const strict = JSON.parse(readFileSync(join(dir, 'strict.json'), 'utf8')) as Verdicts;
  const reval = JSON.parse(readFileSync(join(dir, 'ref-verdicts.json'), 'utf8')) as Verdicts;
  const differ = Object.keys(strict).filter((k) => strict[k]!.correct !== reval[k]!.correct);
  assert.ok(differ.length > 0, 'DREval/47 has next lines whose text is on several lines');
  for (const k of differ) {
    assert.equal(taskOf(k), 'path', k);
    assert.equal(strict[k]!.reason, 'ambiguous_text', k);
  }
});

test('the shared REval vectors get their verdicts through the worker', async () => {
  const { vectors } = JSON.parse(readFileSync(VECTORS, 'utf8')) as {
    vectors: {
      task: RevalItem['task'];
      mode: 'reval' | 'strict';
      cot: boolean;
      answer: string;
      truth: Record<string, unknown>;
      correct: boolean;
      note?: string;
    }[];
  };
  const pool = new TracerPool({ python: resolvePython(undefined, process.env), size: 1, env: process.env });
  try {
    const judge = new JudgeClient(pool);
    for (const mode of ['reval', 'strict'] as const)
      for (const cot of [false, true]) {
        const group = vectors.filter((v) => v.mode === mode && v.cot === cot);
        if (!group.length) continue;
        const verdicts = await judge.revalScore(
          group.map((v) => ({ task: v.task, answer: v.answer, truth: v.truth })),
          { mode, cot },
        );
        group.forEach((v, i) => assert.equal(verdicts[i]!.correct, v.correct, `${v.task} ${JSON.stringify(v.answer)}: ${v.note ?? ''}`));
      }
  } finally {
    await pool.close();
  }
});

test('user errors exit 2 with what to do', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-reval-bad-'));
  const h = capturedIO(dir);
  assert.equal(await main(['eval', 'reval', '--data', dir, '--generations', 'x.json'], h.io), 2);
  assert.match(h.text().stderr, /DREval_data\.jsonl.*checkout of REval/);
  writeFileSync(join(dir, 'g.json'), JSON.stringify({ 'DREval/0/0/state/0': 3 }));
  const h2 = capturedIO(dir);
  assert.equal(await main(['eval', 'reval', '--data', FIXTURE, '--generations', 'g.json'], h2.io), 2);
  assert.match(h2.text().stderr, /--generations must be a JSON object/);
  const h3 = capturedIO(dir);
  assert.equal(await main(['eval', 'reval', '--data', FIXTURE, '--generations', 'g.json', '--mode', 'loose'], h3.io), 2);
  assert.match(h3.text().stderr, /--mode must be reval/);
});

test('online: the test server scripted as a model of known accuracy gets exactly that accuracy per task; a rerun resumes from the cache', async () => {
  const { answers } = await referenceAnswers();
  // The prompts as the command renders them, so the scripted model knows which probe it is asked.
  const programs = await loadReval(FIXTURE);
  const pool = new TracerPool({ python: resolvePython(undefined, process.env), size: 2, env: process.env });
  const byPrompt = new Map<string, string>(); // prompt text → the first probe key asking it
  const promptOf = new Map<string, string>(); // probe key → its prompt text
  try {
    const pairs = programs.flatMap((p) => p.tasks.map((pair) => ({ p, pair })));
    const traces = await pool.traceMany(pairs.map(({ p, pair }) => revalJob(p, pair.input_idx)));
    pairs.forEach(({ p, pair }, i) => {
      for (const probe of probesOf(p, pair, traces[i]!)) {
        const prompt = revalPrompt(p, pair, probe, false).prompt;
        assert.equal(prompt.kind, 'chat');
        const text = prompt.kind === 'chat' ? prompt.messages.at(-1)!.content : '';
        if (!byPrompt.has(text)) byPrompt.set(text, probe.key);
        promptOf.set(probe.key, text);
      }
    });
  } finally {
    await pool.close();
  }
  const keys = Object.keys(answers).sort();
  assert.equal(promptOf.size, keys.length);
  // REval repeats a few inputs, so a few probes share a prompt (and its answer).
  // Right on a prompt exactly when its position is not a multiple of 4: 3 in 4 right, decided here.
  // A path question names its line by its text only, so two lines with the same text share a prompt:
  // such a prompt is answered wrong, since one answer cannot be right for both.
  const refsOf = new Map<string, Set<string>>();
  for (const k of keys) refsOf.set(promptOf.get(k)!, (refsOf.get(promptOf.get(k)!) ?? new Set()).add(answers[k]!));
  const rightPrompts = new Set([...byPrompt.keys()].filter((t, i) => i % 4 !== 0 && refsOf.get(t)!.size === 1));
  const rightKeys = new Set(keys.filter((k) => rightPrompts.has(promptOf.get(k)!)));
  const wrongText = (key: string) => {
    const ref = answers[key]!;
    switch (taskOf(key)) {
      case 'coverage':
        return ref.includes('YES') ? 'NO' : 'YES';
      case 'state':
        return ref.includes('\nNil\n') ? '987654321; int' : 'Nil';
      case 'path':
        return 'no_such_line()';
      default:
        return 'assert False';
    }
  };
  const server = await startOpenAIServer({
    script: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const key = byPrompt.get(messages.at(-1)?.content ?? '');
      if (!key) return { status: 400, json: { error: { message: 'unknown prompt' } } };
      // The server stops at [/ANSWER] as a real one would: the answer ends before it.
      return { text: rightKeys.has(key) ? answers[key]!.replace(/\n\[\/ANSWER\]$/, '') : `[ANSWER]\n${wrongText(key)}` };
    },
  });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'ev-reval-online-'));
    const args = ['--base-url', server.url, '--model', 'test-model', '--cache-dir', 'cache', '--out', 'online.json', '--report', 'report'];
    const r = await run(args, dir);
    assert.equal(r.code, 0, r.stderr);
    // One request per distinct prompt; a repeated one may be asked again when both are in flight at once.
    const asked = server.stats.requests;
    assert.ok(asked >= byPrompt.size && asked <= keys.length, `${asked} requests`);
    assert.match(r.stdout, new RegExp(`model calls: ${keys.length} calls, ${asked} requests`));
    const verdicts = JSON.parse(readFileSync(join(dir, 'online.json'), 'utf8')) as Verdicts;
    for (const task of ['coverage', 'state', 'path', 'output']) {
      const mine = keys.filter((k) => taskOf(k) === task);
      const expected = mine.filter((k) => rightKeys.has(k)).length;
      assert.equal(mine.filter((k) => verdicts[k]!.correct).length, expected, task);
      assert.match(r.stdout, new RegExp(`${task}${task === 'coverage' ? ' acc' : ''} ${((100 * expected) / mine.length).toFixed(2).replace('.', '\\.')} `));
    }
    // The report shows the same accuracy per task, and a trace beside it for each worst example.
    const report = ReportSchema.parse(JSON.parse(readFileSync(join(dir, 'report', 'report.json'), 'utf8')));
    const perTask = report.groups.find((g) => g.name.startsWith('Accuracy per task (well-defined'))!;
    for (const row of perTask.rows) {
      const mine = keys.filter((k) => taskOf(k) === row.label);
      assert.deepEqual([row.n, row.correct], [mine.length, mine.filter((k) => rightKeys.has(k)).length], row.label);
    }
    assert.ok(report.examples.length > 0);
    for (const e of report.examples) {
      assert.equal(rightKeys.has(e.id), false, `${e.id} is a right answer`);
      const trace = JSON.parse(readFileSync(join(dir, 'report', e.trace!), 'utf8')) as { schema: string };
      assert.equal(trace.schema, 'execverify.trace/1');
    }
    assert.match(readFileSync(join(dir, 'report', 'report.html'), 'utf8'), /<title>REval: model /);
    // The raw answers are kept beside the verdicts, in the --generations format.
    const gens = JSON.parse(readFileSync(join(dir, 'online.generations.json'), 'utf8')) as Record<string, string>;
    assert.deepEqual(Object.keys(gens).sort(), keys);
    // A second run asks nothing: every answer comes from the response cache.
    const again = await run(args, dir);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(server.stats.requests, asked);
    assert.match(again.stdout, new RegExp(`${keys.length} cached`));
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'online.json'), 'utf8')), verdicts);
  } finally {
    await server.close();
  }
});

test('online: cancelling stops the run and writes nothing; the same command then finishes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-reval-cancel-'));
  const controller = new AbortController();
  // Every answer is "YES"; the server cancels the run when its fifth request arrives.
  const server = await startOpenAIServer({
    script: (req) => {
      if (req.index === 4) controller.abort();
      return { text: '[ANSWER]\nYES' };
    },
  });
  try {
    const args = [
      'eval',
      'reval',
      '--data',
      FIXTURE,
      '--limit',
      '1',
      '--workers',
      '1',
      '--base-url',
      server.url,
      '--model',
      'test-model',
      '--cache-dir',
      'cache',
      '--out',
      'run.json',
    ];
    const h = capturedIO(dir);
    const code = await main(args, { ...h.io, signal: controller.signal });
    assert.notEqual(code, 0);
    assert.throws(() => readFileSync(join(dir, 'run.json')), /ENOENT/);
    const asked = server.stats.requests;
    assert.ok(asked >= 5, `${asked} requests before the cancel`);
    // The same command again finishes (what was answered before the cancel comes from the cache;
    // the full-rerun test above checks that a finished run is asked nothing again).
    const again = capturedIO(dir);
    assert.equal(await main(args, again.io), 0, again.text().stderr);
    assert.ok(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')));
  } finally {
    await server.close();
  }
});

test('online --cot: the chain-of-thought prompt, and an answer whose [/THOUGHT] never came is read as REval reads it', async () => {
  const { answers } = await referenceAnswers();
  const server = await startOpenAIServer({
    script: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const user = messages.at(-1)?.content ?? '';
      // The prompt ends where the model starts to think; the examples reason in [THOUGHT] blocks.
      if (!user.endsWith('[/QUESTION]\n[THOUGHT]') && !user.endsWith('[/PYTHON]\n[THOUGHT]'))
        return { status: 400, json: { error: { message: 'not a CoT prompt' } } };
      return { text: 'Line by line, the code does this... [ANSWER]\nYES' }; // no [/THOUGHT]: unfinished
    },
  });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'ev-reval-cot-'));
    const r = await run(['--limit', '1', '--cot', '--base-url', server.url, '--model', 'test-model', '--no-cache', '--out', 'cot.json'], dir);
    assert.equal(r.code, 0, r.stderr);
    const verdicts = JSON.parse(readFileSync(join(dir, 'cot.json'), 'utf8')) as Verdicts;
    // Unfinished reasoning: coverage is NO (right exactly where the line does not run), everything else wrong.
    for (const [key, v] of Object.entries(verdicts)) {
      if (taskOf(key) === 'coverage') assert.equal(v.correct, answers[key]!.includes('\nNO\n'), key);
      else assert.equal(v.correct, false, key);
    }
  } finally {
    await server.close();
  }
});
