// `execverify eval dataset STORE`: every record's prompt to the test server,
// scripted as a model right on known records and samples; the accuracy per
// question kind, pass@1 / pass@k and the reward distribution follow exactly,
// and the trivial baseline is scored side by side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { STORE_FILE } from '../../src/engine/dataset/store';
import { ReportSchema } from '../../src/engine/report';
import { sampleRecord } from '../support/sample-records';
import { startOpenAIServer } from '../support/openai-server';
import { capturedIO } from '../support/cli';

test('a model of known accuracy on a store: per kind, pass@k and rewards exactly as scripted; the baseline beside it', async () => {
  const records = Array.from({ length: 6 }, (_v, i) => sampleRecord(i + 1));
  const dir = mkdtempSync(join(tmpdir(), 'ev-dataset-'));
  writeFileSync(join(dir, STORE_FILE), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  // Two samples per record. Record i: sample 0 fully right when i is even, else its output is wrong;
  // sample 1 has the right output and a wrong state answer.
  const server = await startOpenAIServer({
    script: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const i = records.findIndex((r) => r.prompt.at(-1)!.content === messages.at(-1)?.content);
      if (i < 0) return { status: 400, json: { error: { message: 'unknown prompt' } } };
      const r = records[i]!;
      const [out, state] = r
        .reference!.replace(/<\/?answer>/g, '')
        .trim()
        .split('\n');
      const first = i % 2 === 0 ? r.reference! : `<answer>\nassert ${r.entry} == -12345\n${state}\n</answer>`;
      return { text: [first, `<answer>\n${out}\n-1; int\n</answer>`] };
    },
  });
  try {
    const h = capturedIO(dir);
    const code = await main(
      ['eval', 'dataset', '.', '--base-url', server.url, '--model', 'test-model', '--samples', '2', '--no-cache', '--report', 'rep', '--out', 'results.json'],
      h.io,
    );
    assert.equal(code, 0, h.text().stderr);
    // output: right in sample 0 of even records (3) and every sample 1 (6) → 9 / 12; state: sample 0 always (6) → 6 / 12.
    // Fully right: sample 0 of even records → pass@1 = mean(c/2) = (3 · 1/2) / 6 = 25%; pass@2 = 3 / 6 = 50%.
    assert.match(h.text().stdout, /test-model @ \S+: pass@1 25\.00 pass@2 50\.00 /);
    assert.match(h.text().stdout, /output 75\.00 \(12\) \| state 50\.00 \(12\)/);
    // The baseline answers None and Nil: nothing right.
    assert.match(h.text().stdout, /baseline: pass@1 0\.00 .*output 0\.00 \(6\) \| state 0\.00 \(6\)/);
    const report = ReportSchema.parse(JSON.parse(readFileSync(join(dir, 'rep', 'report.json'), 'utf8')));
    const kinds = report.groups.find((g) => g.name === 'Accuracy per question kind')!;
    assert.deepEqual(
      kinds.rows.map((r) => [r.label, r.correct, r.n]),
      [
        ['output', 9, 12],
        ['output · baseline', 0, 6],
        ['state', 6, 12],
        ['state · baseline', 0, 6],
      ],
    );
    // Rewards: the judge's, one per sample; the bins hold every sample once.
    const results = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as Record<string, Record<string, { reward: number }[]>>;
    const rewards = Object.values(Object.values(results)[0]!)
      .flat()
      .map((s) => s.reward);
    assert.equal(rewards.length, 12);
    const dist = report.groups.find((g) => g.name === 'Reward distribution')!;
    const modelBins = dist.rows.filter((r) => !r.label.includes('baseline'));
    assert.equal(
      modelBins.reduce((a, r) => a + r.correct, 0),
      12,
    );
    assert.equal(modelBins.at(-1)!.correct, rewards.filter((x) => x >= 1.75).length);
    assert.ok(report.examples.length > 0 && report.examples.every((e) => e.reason.startsWith('reward ')));
  } finally {
    await server.close();
  }
});

test('a store that is missing is a usage error that says how to make one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-dataset-none-'));
  const h = capturedIO(dir);
  assert.equal(await main(['eval', 'dataset', 'nothing-here', '--baseline'], h.io), 2);
  assert.match(h.text().stderr, /no sample store at .*execverify harvest/);
});
