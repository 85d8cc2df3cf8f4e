// Code-generation tasks from a synthesized and a harvested store, exported by
// the CLI (`export --task codegen`) for TRL, verl and OpenRLHF, and scored by the
// Python reward's trainer entry point: the reference 1.0, a wrong one its share.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { main } from '../../src/cli/main';
import { harvestAsking } from '../../src/engine/harvest/questioner';
import { ModelClient } from '../../src/engine/model/client';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir, resolvePython } from '../../src/engine/python';
import { CodegenTruthSchema } from '../../src/engine/synthesize/codegen';
import { loadConstraints, sampleSpecs } from '../../src/engine/synthesize/constraints';
import { synthesize } from '../../src/engine/synthesize/pipeline';
import { modelSource } from '../../src/engine/synthesize/source';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const ROOT = path.resolve(__dirname, '..', '..');
const python = resolvePython(undefined, process.env);
const PROGRAM = [
  'LIMIT = 2',
  '',
  '',
  'def clip(x):',
  '    return min(x, LIMIT)',
  '',
  '',
  'def clipped_sum(xs):',
  '    """The sum of xs, each clipped to LIMIT.',
  '',
  '    >>> clipped_sum([5])',
  '    2',
  '    """',
  '    total = 0',
  '    for x in xs:',
  '        total += clip(x)',
  '    return total',
  '',
].join('\n');
const ANSWER = `\`\`\`python\n${PROGRAM}\`\`\`\n\`\`\`\nclipped_sum([1, 5, 2])\nclipped_sum([])\nclipped_sum([3, 3])\n\`\`\`\n`;

let server: OpenAIServer;
let root: string;
before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-codegen-'));
  server = await startOpenAIServer({ script: () => ({ text: ANSWER }) });
});
after(async () => {
  await server.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const sink = new Writable({ write: (chunk, _enc, cb) => ((out += String(chunk)), cb()) });
  const code = await main(args, { stdout: sink, stderr: sink, env: process.env, cwd: root, signal: new AbortController().signal });
  return { code, out };
}

function rows(dir: string): Record<string, unknown>[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').trim().split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** trl_reward from the Python package, on exported ground truths. */
function trlRewards(truths: string[], completions: string[]): number[] {
  const code =
    'import json, sys\nfrom execverify.reward import trl_reward\nd = json.load(sys.stdin)\nprint(json.dumps(trl_reward(completions=d["c"], ground_truth=d["t"])))';
  const r = spawnSync(python, ['-c', code], {
    input: JSON.stringify({ c: completions, t: truths }),
    env: { ...process.env, PYTHONPATH: pythonTracerDir() },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as number[];
}

test('a synthesized store becomes "write this function" tasks whose tests are its calls; the reward scores them', async () => {
  const store = path.join(root, 'store');
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
  const constraints = loadConstraints();
  try {
    await synthesize(
      { out: store, specs: sampleSpecs(constraints, { count: 1, seed: 0 }), constraints, concurrency: 1 },
      {
        python,
        tracerDir: pythonTracerDir(),
        env: process.env,
        source: modelSource(client),
        questioner: harvestAsking(BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!).questioner,
      },
    );
  } finally {
    client.close();
  }
  const r = await cli(['export', 'store', '--task', 'codegen', '--format', 'trl', '--out', 'trl']);
  assert.equal(r.code, 0, r.out);
  const [row, ...more] = rows(path.join(root, 'trl'));
  assert.equal(more.length, 0, 'one function, one task');
  const truth = CodegenTruthSchema.parse(JSON.parse(row!.ground_truth as string));
  assert.equal(truth.function, 'clipped_sum');
  assert.deepEqual(
    truth.tests.map((t) => [t.call, t.value.repr]),
    [
      ['clipped_sum([1, 5, 2])', '5'],
      ['clipped_sum([3, 3])', '4'],
      ['clipped_sum([])', '0'],
    ],
  );
  assert.match(truth.context, /def clip\(x\)/);
  assert.doesNotMatch(truth.context, /clipped_sum/, 'the function itself is not in its context');
  const prompt = (row!.prompt as { content: string }[]).map((m) => m.content).join('\n');
  assert.match(prompt, /def clipped_sum\(xs\):/);
  assert.match(prompt, /The sum of xs, each clipped to LIMIT\./);
  assert.doesNotMatch(prompt, />>>|clipped_sum\(\[5\]\)/, 'the docstring examples are gone');
  assert.doesNotMatch(prompt, /total \+= clip/, 'the body is not shown');
  const reference = '```python\ndef clipped_sum(xs):\n    return sum(clip(x) for x in xs)\n```';
  const wrong = '```python\ndef clipped_sum(xs):\n    return sum(xs)\n```'; // right only for [] → 1 of 3
  assert.deepEqual(trlRewards([row!.ground_truth as string, row!.ground_truth as string, row!.ground_truth as string], [reference, wrong, 'no code']), [
    1,
    1 / 3,
    0,
  ]);
  const verl = await cli(['export', 'store', '--task', 'codegen', '--format', 'openrlhf', '--out', 'orl']);
  assert.equal(verl.code, 0, verl.out);
  assert.equal(rows(path.join(root, 'orl'))[0]!.label, row!.ground_truth);
  const parquet = await cli(['export', 'store', '--task', 'codegen', '--format', 'verl', '--out', 'verl']);
  assert.equal(parquet.code, 0, parquet.out);
  assert.match(parquet.out, /1 rows written/);
  assert.ok(fs.readdirSync(path.join(root, 'verl')).some((f) => f.endsWith('.parquet')));
});

test('a harvested store gives tasks too, from its captured calls', async () => {
  const store = path.join(root, 'harvested');
  const project = path.join(ROOT, 'test', 'fixtures', 'synthesize', 'branchy-project');
  const h = await cli(['harvest', project, '--out', store, '--no-answers', '--quiet']);
  assert.equal(h.code, 0, h.out);
  const r = await cli(['export', 'harvested', '--task', 'codegen', '--format', 'trl', '--out', 'htrl']);
  assert.equal(r.code, 0, r.out);
  const [row] = rows(path.join(root, 'htrl'));
  const truth = CodegenTruthSchema.parse(JSON.parse(row!.ground_truth as string));
  assert.equal(truth.function, 'grade');
  assert.deepEqual(
    truth.tests.map((t) => t.call),
    ['grade(95, 0)'],
  );
  const solution = "```python\ndef grade(score, curve=0):\n    return 'A' if score + curve >= 90 else 'F'\n```";
  assert.deepEqual(trlRewards([row!.ground_truth as string], [solution]), [1]);
});
