// `execverify eval cruxeval` online: the official direct prompt to the test
// server scripted as a model that is right on a known share of n samples, the
// answers read by the official post-processing and written in the official
// generations format, pass@1 exactly that share.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { startOpenAIServer } from '../support/openai-server';
import { capturedIO } from '../support/cli';

const BENCH = join(__dirname, '..', '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');

test('online output prediction: 3 samples per row, right on a known number of them; pass@1 and the generations file follow', async () => {
  assert.ok(existsSync(BENCH), `CRUXEval data missing at ${BENCH}`);
  const rows = readFileSync(BENCH, 'utf8')
    .trim()
    .split('\n')
    .slice(0, 6)
    .map((l) => JSON.parse(l) as { id: string; code: string; input: string; output: string });
  const dir = mkdtempSync(join(tmpdir(), 'ev-crux-online-'));
  writeFileSync(join(dir, 'data.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  // Row i gets i % 4 right answers of 3 (the fourth pattern: 0 right): decided here, not by the scorer.
  const rightOf = (i: number) => Math.min(3, i % 4);
  const server = await startOpenAIServer({
    script: (req) => {
      const prompt = String(req.body?.prompt ?? '');
      const i = rows.findIndex((r) => prompt.endsWith(`${r.code}\nassert f(${r.input}) == ??\n[/PYTHON]\n[ANSWER]\n`));
      if (i < 0) return { status: 400, json: { error: { message: 'not a CRUXEval prompt' } } };
      const r = rows[i]!;
      const texts = [0, 1, 2].map((j) => `assert f(${r.input}) == ${j < rightOf(i) ? r.output : '"__wrong__"'}\n`);
      return { text: texts };
    },
  });
  try {
    const h = capturedIO(dir);
    const code = await main(
      [
        'eval',
        'cruxeval',
        '--data',
        'data.jsonl',
        '--mode',
        'output',
        '--base-url',
        server.url,
        '--model',
        'test-model',
        '--api',
        'completions',
        '--samples',
        '3',
        '--temperature',
        '0.8',
        '--no-cache',
        '--out',
        'scored.json',
      ],
      h.io,
    );
    assert.equal(code, 0, h.text().stderr);
    assert.equal(server.stats.requests, rows.length);
    // One request per row, n = 3, the official stop sequence, the temperature asked for.
    for (const r of server.requests) {
      assert.equal(r.path, '/v1/completions');
      assert.equal(r.body?.n, 3);
      assert.deepEqual(r.body?.stop, ['[/ANSWER]']);
      assert.equal(r.body?.temperature, 0.8);
    }
    const expectedP1 = (100 * rows.reduce((s, _r, i) => s + rightOf(i) / 3, 0)) / rows.length;
    assert.match(h.text().stdout, new RegExp(`pass@1: ${expectedP1.toFixed(1).replace('.', '\\.')} `));
    const gens = JSON.parse(readFileSync(join(dir, 'scored.generations.json'), 'utf8')) as Record<string, string[]>;
    assert.deepEqual(
      Object.keys(gens),
      rows.map((r) => r.id),
    );
    rows.forEach((r, i) =>
      assert.deepEqual(
        gens[r.id],
        [0, 1, 2].map((j) => (j < rightOf(i) ? r.output : '"__wrong__"')),
      ),
    );
    const scored = JSON.parse(readFileSync(join(dir, 'scored.json'), 'utf8')) as Record<string, boolean[]>;
    rows.forEach((r, i) =>
      assert.deepEqual(
        scored[r.id],
        [0, 1, 2].map((j) => j < rightOf(i)),
      ),
    );
    // The generations file is the official format: scoring it offline gives the same verdicts.
    const again = capturedIO(dir);
    assert.equal(
      await main(['eval', 'cruxeval', '--data', 'data.jsonl', '--mode', 'output', '--generations', 'scored.generations.json', '--out', 'again.json'], again.io),
      0,
    );
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'again.json'), 'utf8')), scored);
  } finally {
    await server.close();
  }
});
