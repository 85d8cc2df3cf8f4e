// Synthesis building blocks: the constraints file and its seeded specs, the
// prompt, the answer parser's drop reasons, and coverage-guided mutation on
// branchy functions (real tracer, scripted test server).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { readStore } from '../../src/engine/dataset/store';
import { harvestAsking } from '../../src/engine/harvest/questioner';
import { ModelClient } from '../../src/engine/model/client';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir, resolvePython } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { parseProgramAnswer } from '../../src/engine/synthesize/answer';
import { ConstraintsError, loadConstraints, parseSpecId, sampleSpecs } from '../../src/engine/synthesize/constraints';
import { coverageOf, synthesize } from '../../src/engine/synthesize/pipeline';
import { ANSWER_FORMAT, synthesisPrompt } from '../../src/engine/synthesize/prompt';
import { modelSource } from '../../src/engine/synthesize/source';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const constraints = loadConstraints();

test('specs are seeded: the same seed gives the same specs, the first N whatever the count, every level in turn', () => {
  const a = sampleSpecs(constraints, { count: 10, seed: 7 });
  assert.deepEqual(sampleSpecs(constraints, { count: 10, seed: 7 }), a);
  assert.deepEqual(sampleSpecs(constraints, { count: 4, seed: 7 }), a.slice(0, 4));
  assert.notDeepEqual(sampleSpecs(constraints, { count: 10, seed: 8 }), a);
  assert.deepEqual(
    a.slice(0, 5).map((s) => s.level),
    [1, 2, 3, 4, 5],
  );
  for (const s of a) {
    const level = constraints.levels.find((l) => l.level === s.level)!;
    assert.equal(s.constraints.types.length, level.types);
    assert.ok(level.depths.includes(s.constraints.depth));
    assert.ok(level.variants.includes(s.constraints.variant));
    assert.equal(s.constraints.nested !== null, level.nested);
    for (const t of s.constraints.types) for (const m of t.methods) assert.ok(constraints.types[t.type]!.includes(m), `${t.type}.${m} is in the file`);
    assert.deepEqual(parseSpecId(s.id), { seed: 7, index: s.index });
  }
  assert.deepEqual(new Set(sampleSpecs(constraints, { count: 6, seed: 1, levels: [2, 4] }).map((s) => s.level)), new Set([2, 4]));
});

test('a user constraints file replaces the built-in one; a bad one is refused with the field that is wrong', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'constraints-'));
  try {
    const mine = { ...structuredClone(constraints), name: 'mine', version: '2', types: { str: ['split'], list: ['append'] } };
    mine.levels = [{ level: 1, name: 'tiny', types: 1, methods: 1, nested: false, variants: ['one_function'], depths: [0] }];
    fs.writeFileSync(path.join(dir, 'mine.json'), JSON.stringify(mine));
    const loaded = loadConstraints(path.join(dir, 'mine.json'));
    const [spec] = sampleSpecs(loaded, { count: 1, seed: 0 });
    assert.equal(spec!.constraintsVersion, 'mine@2');
    assert.ok(['split', 'append'].includes(spec!.constraints.types[0]!.methods[0]!));
    fs.writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ ...mine, levels: [{ ...mine.levels[0], types: 5 }] }));
    assert.throws(
      () => loadConstraints(path.join(dir, 'bad.json')),
      (e: Error) => e instanceof ConstraintsError && /levels\.0\.types/.test(e.message),
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the prompt states the constraints and the answer format', () => {
  const [spec] = sampleSpecs(constraints, { count: 1, seed: 3, levels: [4] });
  const [system, user] = synthesisPrompt(spec!, constraints);
  assert.equal(system!.role, 'system');
  assert.ok(user!.content.includes(ANSWER_FORMAT));
  assert.ok(user!.content.includes(spec!.constraints.blueprint));
  assert.ok(user!.content.includes(constraints.variants.two_functions));
  for (const t of spec!.constraints.types) for (const m of t.methods) assert.ok(user!.content.includes(m));
});

test('the answer parser reads one program and its calls, ignores prose, and names what it cannot read', () => {
  const good = 'Sure!\n```python\ndef f(x):\n    return x + 1\n```\nCalls:\n```\nf(1)\n>>> f(2)\n# a comment\n\nf(3)\n```\nDone.';
  assert.deepEqual(parseProgramAnswer(good), { ok: true, code: 'def f(x):\n    return x + 1\n', calls: ['f(1)', 'f(2)', 'f(3)'] });
  assert.deepEqual(parseProgramAnswer('no code at all'), { ok: false, reason: 'no_program' });
  assert.deepEqual(parseProgramAnswer('```python\nx = 1\n```'), { ok: false, reason: 'no_program' });
  const two = '```python\ndef f(x):\n    return x\n```\n```python\ndef g(x):\n    return -x\n```\n```\nf(1)\n```';
  assert.deepEqual(parseProgramAnswer(two), { ok: false, reason: 'conflicting_programs' });
  const same = '```python\ndef f(x):\n    return x\n```\nagain:\n```python\ndef f(x):\n    return x   \n```\n```\nf(1)\n```';
  assert.equal(parseProgramAnswer(same).ok, true, 'the same program twice is one program');
  assert.deepEqual(parseProgramAnswer('```python\ndef f(x):\n    return x\n```'), { ok: false, reason: 'no_calls' });
  assert.equal(parseProgramAnswer('```py\r\ndef f(x):\r\n    return x\r\n```\r\n```text\r\nf(2)\r\n```').ok, true);
});

// A function with branches the model's one call does not reach.
const BRANCHY = [
  'def classify(xs, t):',
  '    out = []',
  '    for x in xs:',
  '        if x > t:',
  "            out.append('hi')",
  '        elif x == t:',
  "            out.append('eq')",
  '        else:',
  "            out.append('lo')",
  '    if not xs:',
  "        return 'empty'",
  "    return ','.join(out)",
  '',
].join('\n');
// The second round's answer: two new calls, one already asked, one that is not literal.
const INPUTS = 'More:\n```\nclassify([], 0)\nclassify([1, 9], 5)\nclassify([5], 5)\nclassify(x, 1)\n```\n';
const ANSWER = `\`\`\`python\n${BRANCHY}\`\`\`\n\`\`\`\nclassify([5], 5)\n\`\`\`\n`;

let server: OpenAIServer;
let pool: TracerPool;
let root: string;
before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-mutate-'));
  server = await startOpenAIServer({
    script: (req) => {
      const content = ((req.body?.messages ?? []) as { content: string }[]).at(-1)?.content ?? '';
      return { text: /^Program s\d+-\d+\.\d+\.inputs:/.test(content) ? INPUTS : ANSWER };
    },
  });
  pool = new TracerPool({ size: 1 });
});
after(async () => {
  await server.close();
  await pool.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function round(out: string, inputs: number) {
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
  try {
    return await synthesize(
      { out, specs: sampleSpecs(constraints, { count: 1, seed: 0 }), constraints, inputs, concurrency: 1 },
      {
        python: resolvePython(undefined, process.env),
        tracerDir: pythonTracerDir(),
        env: process.env,
        source: modelSource(client),
        questioner: harvestAsking(BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!).questioner,
      },
    );
  } finally {
    client.close();
  }
}

test('a second round asks the model for more calls of a kept program, online or through a batch file, to the same samples', async () => {
  const online = path.join(root, 'inputs-online');
  await round(online, 4);
  const entries = (dir: string) =>
    readStore(dir)
      .items.map((r) => `${r.entry}${r.provenance.synthesis?.round === 2 ? ' (round 2)' : ''}`)
      .sort();
  assert.deepEqual(entries(online), ['classify([1, 9], 5) (round 2)', 'classify([5], 5)', 'classify([], 0) (round 2)']);
  const drops = fs.readFileSync(path.join(online, 'drops.jsonl'), 'utf8');
  assert.match(drops, /"reason":"non_literal_input"/);

  // Round 1 online, round 2 through the CLI's batch road.
  const offline = path.join(root, 'inputs-offline');
  await round(offline, 0);
  const { main } = await import('../../src/cli/main');
  let said = '';
  const sink = { write: (t: string) => ((said += t), true) } as unknown as NodeJS.WritableStream;
  const io = { stdout: sink, stderr: sink, env: process.env, cwd: root, signal: new AbortController().signal };
  assert.equal(await main(['synthesize', 'prompts', '--inputs', '4', '--from', offline, '--out', 'round2.jsonl', '--model', 'm'], io), 0, said);
  const requests = fs
    .readFileSync(path.join(root, 'round2.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { custom_id: string });
  assert.deepEqual(
    requests.map((r) => r.custom_id),
    ['s0-0.0.inputs'],
  );
  const results = requests.map((r) =>
    JSON.stringify({
      custom_id: r.custom_id,
      response: {
        status_code: 200,
        body: {
          id: 'x',
          object: 'chat.completion',
          model: 'm',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: INPUTS } }],
        },
      },
    }),
  );
  fs.writeFileSync(path.join(root, 'round2-results.jsonl'), results.join('\n') + '\n');
  const code = await main(
    [
      'synthesize',
      'import',
      'round2-results.jsonl',
      '--requests',
      'round2.jsonl',
      '--inputs',
      '4',
      '--out',
      offline,
      '--model',
      'm',
      '--k',
      '0',
      '--quiet',
      '--json',
    ],
    io,
  );
  assert.equal(code, 0, said);
  assert.deepEqual(entries(offline), entries(online));
});

async function mutated(out: string, mutateSeed: number) {
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
  try {
    return await synthesize(
      { out, specs: sampleSpecs(constraints, { count: 1, seed: 0 }), constraints, mutate: 12, mutateSeed, concurrency: 1 },
      {
        python: resolvePython(undefined, process.env),
        tracerDir: pythonTracerDir(),
        env: process.env,
        source: modelSource(client),
        questioner: harvestAsking(BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!).questioner,
      },
    );
  } finally {
    client.close();
  }
}

test('mutation adds covered branches, every kept mutated sample reproduces, and a seed gives the same samples', async () => {
  const first = await mutated(path.join(root, 'a'), 11);
  const records = readStore(path.join(root, 'a')).items;
  const kept = records.filter((r) => r.provenance.synthesis?.source === 'mutated');
  assert.ok(kept.length >= 2, `mutated samples kept: ${kept.map((r) => r.entry).join(' | ')}`);
  assert.equal(first.counters.mutationKept, kept.length);
  assert.ok(first.counters.coverageAfter > first.counters.coverageBefore, 'the kept mutations reach lines or edges the call did not');
  const base = await pool.trace({ path: 'p.py', source: BRANCHY, entry: { kind: 'call', expr: 'classify([5], 5)' } });
  const covered = coverageOf(base);
  let union = new Set(covered);
  for (const r of kept) {
    assert.equal(r.provenance.synthesis?.from, 'classify([5], 5)');
    const again = await pool.trace({ path: 'p.py', source: r.code, entry: { kind: 'call', expr: r.entry } });
    assert.equal(again.outcome.kind, 'returned');
    assert.equal(again.outcome.kind === 'returned' && again.outcome.value.repr, r.result.repr, `${r.entry} reproduces`);
    const gained = [...coverageOf(again)].filter((e) => !union.has(e));
    assert.ok(gained.length > 0, `${r.entry} reached something new`);
    union = new Set([...union, ...coverageOf(again)]);
  }
  assert.ok(union.has('classify:10>11') || union.has('classify:11'), 'the empty-list branch is reached');
  await mutated(path.join(root, 'b'), 11);
  const entries = (dir: string) =>
    readStore(dir)
      .items.map((r) => r.entry)
      .sort();
  assert.deepEqual(entries(path.join(root, 'b')), entries(path.join(root, 'a')), 'the same seed, the same mutated samples');
});
