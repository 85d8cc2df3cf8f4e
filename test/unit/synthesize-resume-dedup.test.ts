// A resumed synthesis decides dedup as the uninterrupted run does: a call that
// passed dedup and was dropped later (here: nondeterministic) still guards
// against its later copies after a restart, so the resumed store and drops
// equal one uninterrupted run's.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { harvestAsking } from '../../src/engine/harvest/questioner';
import { ModelClient } from '../../src/engine/model/client';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir, resolvePython } from '../../src/engine/python';
import { loadConstraints, sampleSpecs, type Spec } from '../../src/engine/synthesize/constraints';
import { synthesize, workFiles, type SynthDrop } from '../../src/engine/synthesize/pipeline';
import { modelSource } from '../../src/engine/synthesize/source';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { answer, specIndex } from '../fixtures/synthesize/programs';

const ROLL = 'import random\n\ndef roll(n):\n    return random.randint(1, 10 ** 9) + n\n';
// The same program with other names: a near-duplicate of spec 0 for the same argument.
const THROW = 'import random\n\ndef throw(k):\n    return random.randint(1, 10 ** 9) + k\n';
const ANSWERS = [answer(ROLL, ['roll(1)']), answer(THROW, ['throw(1)'])];

const template = BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!;
const constraints = loadConstraints();
const specs = sampleSpecs(constraints, { count: ANSWERS.length, seed: 0 });
let server: OpenAIServer;
let root: string;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-resume-'));
  server = await startOpenAIServer({ script: (req) => ({ text: ANSWERS[specIndex(req.body) ?? -1] ?? 'wrong' }) });
});
after(async () => {
  await server.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function run(out: string, subset: Spec[]) {
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
  try {
    await synthesize(
      { out, specs: subset, constraints, concurrency: 1, limits: { steps: 200_000 } },
      {
        python: resolvePython(undefined, process.env),
        tracerDir: pythonTracerDir(),
        env: process.env,
        source: modelSource(client),
        questioner: harvestAsking(template).questioner,
      },
    );
  } finally {
    client.close();
  }
}

const drops = (out: string) =>
  fs
    .readFileSync(workFiles(out).drops, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as SynthDrop)
    .map((d) => `${d.spec} ${d.stage} ${d.reason}`)
    .sort();

test('a call dropped after dedup still makes its later copy a near-duplicate when the run is resumed', async () => {
  const whole = path.join(root, 'whole');
  await run(whole, specs);
  const expected = [`${specs[0]!.id} confirm nondeterministic`, `${specs[1]!.id} dedup near_duplicate`].sort();
  assert.deepEqual(drops(whole), expected, 'the uninterrupted run');

  const resumed = path.join(root, 'resumed');
  await run(resumed, specs.slice(0, 1)); // stopped after spec 0
  await run(resumed, specs); // resumed: spec 0 is decided, spec 1 is new
  assert.deepEqual(drops(resumed), expected, 'the resumed run decides spec 1 as the uninterrupted run did');
});
