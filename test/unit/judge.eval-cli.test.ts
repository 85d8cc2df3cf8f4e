// `execverify eval cruxeval` on real CRUXEval samples: pass@k printed, the
// per-sample verdict file written in the official shape, user errors exit 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { capturedIO } from '../support/cli';

const BENCH = join(__dirname, '..', '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');

function fixture(n: number) {
  assert.ok(existsSync(BENCH), `CRUXEval data missing at ${BENCH} (expected ../shared/benchmarks from the repo root)`);
  const dir = mkdtempSync(join(tmpdir(), 'ev-eval-'));
  const rows = readFileSync(BENCH, 'utf8')
    .trim()
    .split('\n')
    .slice(0, n)
    .map((l) => JSON.parse(l) as { id: string; input: string; output: string });
  writeFileSync(join(dir, 'data.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return { dir, rows };
}

test('output mode: reference answers pass, wrong and f(input) answers fail; pass@1 and pass@5 printed', async () => {
  const { dir, rows } = fixture(8);
  // Per sample: the true output, a wrong value, the forbidden call, and the true output twice more.
  const gens = Object.fromEntries(rows.map((r) => [r.id, [r.output, '"__wrong__"', `f(${r.input})`, r.output, r.output]]));
  writeFileSync(join(dir, 'gens.json'), JSON.stringify(gens));
  const h = capturedIO(dir);
  const code = await main(
    ['eval', 'cruxeval', '--data', 'data.jsonl', '--generations', 'gens.json', '--mode', 'output', '--out', 'scored.json', '--workers', '1'],
    h.io,
  );
  assert.equal(code, 0, h.text().stderr);
  // 3 of 5 right in every sample: pass@1 = 60.0, pass@5 = 100.0.
  assert.match(h.text().stdout, /pass@1: 60\.0 {2}pass@5: 100\.0/);
  const scored = JSON.parse(readFileSync(join(dir, 'scored.json'), 'utf8')) as Record<string, boolean[]>;
  assert.deepEqual(
    Object.keys(scored),
    rows.map((r) => r.id),
  );
  for (const id of Object.keys(scored)) assert.deepEqual(scored[id], [true, false, false, true, true]);
});

test('input mode: f(reference input) passes, an answer without f( fails', async () => {
  const { dir, rows } = fixture(4);
  writeFileSync(join(dir, 'gens.json'), JSON.stringify(Object.fromEntries(rows.map((r) => [r.id, [`f(${r.input})`, r.input]]))));
  const h = capturedIO(dir);
  const code = await main(['eval', 'cruxeval', '--data', 'data.jsonl', '--generations', 'gens.json', '--mode', 'input', '--out', 'o.json'], h.io);
  assert.equal(code, 0, h.text().stderr);
  assert.match(h.text().stdout, /pass@1: 50\.0 {2}pass@5: 0\.0/);
  assert.match(h.text().stdout, /fewer than 5 generations/);
  const scored = JSON.parse(readFileSync(join(dir, 'o.json'), 'utf8')) as Record<string, boolean[]>;
  for (const v of Object.values(scored)) assert.deepEqual(v, [true, false]);
});

test('user mistakes are one line and exit code 2', async () => {
  const { dir, rows } = fixture(2);
  writeFileSync(join(dir, 'gens.json'), JSON.stringify({ [rows[0]!.id]: ['1'] }));
  const cases: [string[], RegExp][] = [
    [['eval', 'cruxeval', '--data', 'data.jsonl', '--generations', 'gens.json'], /--mode must be output or input/],
    [['eval', 'humaneval', '--mode', 'output'], /the benchmarks are cruxeval, reval, lcb-exec/],
    [['eval', 'cruxeval', '--data', 'nope.jsonl', '--generations', 'gens.json', '--mode', 'output'], /cannot read --data/],
    [['eval', 'cruxeval', '--data', 'data.jsonl', '--generations', 'gens.json', '--mode', 'output'], /no answers for 1 samples/],
  ];
  for (const [argv, msg] of cases) {
    const h = capturedIO(dir);
    assert.equal(await main(argv, h.io), 2, argv.join(' '));
    assert.match(h.text().stderr, msg);
  }
});
