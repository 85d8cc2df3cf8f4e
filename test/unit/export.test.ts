// Exporters: one file per split, deterministic sharding that partitions the
// records, and the exact keys each trainer reads. (The Parquet files are read
// back by pyarrow and Hugging Face datasets in python-tracer/tests_venv.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { exportRecords, parseShard, shardOf, verlRow, VERL_COLUMNS } from '../../src/engine/dataset/exporters';
import { sampleRecord } from '../support/sample-records';
import type { SampleRecord } from '../../src/engine/dataset/record';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-export-'));
const records: SampleRecord[] = Array.from({ length: 30 }, (_, n) => sampleRecord(n, n % 5 === 0 ? { split: 'test' } : { split: 'train' }));
const readJsonl = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('--shard parses i/n and refuses anything else', () => {
  assert.deepEqual(parseShard('1/4'), { index: 1, count: 4 });
  assert.match(String(parseShard('4/4')), /0 <= i < n/);
  assert.match(String(parseShard('a/b')), /i\/n/);
  assert.match(String(parseShard('0/0')), /0 <= i < n/);
});

test('shards partition the records: disjoint, complete, and the same on every run', () => {
  const out = tmp();
  const ids: string[][] = [];
  for (let i = 0; i < 3; i++) {
    const result = exportRecords(records, { format: 'openrlhf', out, shard: { index: i, count: 3 } });
    ids.push(result.files.flatMap((f) => readJsonl(f.path).map((r) => String(r.id))));
    for (const f of result.files) assert.match(path.basename(f.path), new RegExp(`-0000${i}-of-00003\\.jsonl$`));
  }
  const all = ids.flat();
  assert.equal(new Set(all).size, all.length, 'disjoint');
  assert.deepEqual([...all].sort(), records.map((r) => r.id).sort(), 'complete');
  for (const r of records) assert.ok(ids[shardOf(r.id, 3)]!.includes(r.id));
  const again = exportRecords(records, { format: 'openrlhf', out: tmp(), shard: { index: 0, count: 3 } });
  assert.deepEqual(
    again.files.flatMap((f) => readJsonl(f.path).map((r) => String(r.id))),
    ids[0],
  );
});

test('verl rows have exactly the verl columns, one structure on every row, ground truth as a JSON string', () => {
  const rows = records.map((r, i) => verlRow(r, i, { format: 'verl', out: '' }));
  const columns = VERL_COLUMNS.map(([name]) => name);
  for (const row of rows) {
    assert.deepEqual(Object.keys(row), columns);
    assert.deepEqual(Object.keys(row.extra_info as object), Object.keys(rows[0]!.extra_info as object));
    const rm = row.reward_model as { style: string; ground_truth: string };
    assert.equal(rm.style, 'rule');
    assert.equal((JSON.parse(rm.ground_truth) as { schema: string }).schema, 'execverify.truth/1');
    assert.equal(row.ability, 'code_execution_reasoning');
    assert.deepEqual(Object.keys((row.prompt as object[])[0]!), ['role', 'content']);
  }
  const out = tmp();
  const result = exportRecords(records, { format: 'verl', out });
  assert.deepEqual(
    result.files.map((f) => path.basename(f.path)),
    ['train.parquet', 'test.parquet'],
  );
  assert.equal(result.rows, records.length);
  for (const f of result.files) {
    const bytes = fs.readFileSync(f.path);
    assert.equal(bytes.subarray(0, 4).toString(), 'PAR1');
    assert.equal(bytes.subarray(-4).toString(), 'PAR1');
  }
});

test('exports are byte-identical whatever order the store holds the records in', () => {
  const a = exportRecords(records, { format: 'verl', out: tmp() });
  const b = exportRecords([...records].reverse(), { format: 'verl', out: tmp() });
  for (let i = 0; i < a.files.length; i++) assert.deepEqual(fs.readFileSync(a.files[i]!.path), fs.readFileSync(b.files[i]!.path));
});

test('TRL and OpenRLHF rows carry the prompt as chat and the ground truth under the documented keys', () => {
  const out = tmp();
  const trl = exportRecords(records, { format: 'trl', out, splits: ['train'] });
  assert.deepEqual(
    trl.files.map((f) => path.basename(f.path)),
    ['train.jsonl'],
  );
  const row = readJsonl(trl.files[0]!.path)[0]!;
  assert.deepEqual(Object.keys(row), ['prompt', 'ground_truth', 'data_source', 'sample_id', 'difficulty']);
  const rlhf = readJsonl(exportRecords(records, { format: 'openrlhf', out: tmp() }).files[0]!.path)[0]!;
  assert.deepEqual(Object.keys(rlhf), ['input', 'label', 'datasource', 'id']);
  assert.ok(Array.isArray(rlhf.input));
  const pq = exportRecords(records, { format: 'trl', out: tmp(), parquet: true });
  assert.ok(pq.files.every((f) => f.path.endsWith('.parquet')));
});

test('ShareGPT keeps verified answers only: a fully right model answer, else the reference from the real run', () => {
  const wrong = { model: 'm', text: 'wrong', reward: 0, rIo: 0, rWhite: 0.5, breakdown: [] };
  const right = { model: 'm', text: 'right answer', reward: 2, rIo: 1, rWhite: 1, breakdown: [] };
  const recs = [
    sampleRecord(1, { answers: [wrong, right], split: 'train' }),
    sampleRecord(2, { answers: [wrong], split: 'train' }),
    sampleRecord(3, { answers: [wrong], reference: null, split: 'train' }),
  ];
  const result = exportRecords(recs, { format: 'sharegpt', out: tmp() });
  assert.deepEqual(result.skipped, { no_verified_answer: 1 });
  const rows = JSON.parse(fs.readFileSync(result.files[0]!.path, 'utf8')) as { id: string; system: string; conversations: { from: string; value: string }[] }[];
  assert.equal(rows.length, 2);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const first = byId.get(recs[0]!.id)!;
  assert.equal(first.system, 'You simulate Python execution.');
  assert.deepEqual(
    first.conversations.map((c) => c.from),
    ['human', 'gpt'],
  );
  assert.equal(first.conversations[1]!.value, 'right answer');
  assert.equal(byId.get(recs[1]!.id)!.conversations[1]!.value, recs[1]!.reference);
  assert.ok(!rows.some((r) => r.conversations.some((c) => c.value === 'wrong')));
});

test('CWM rows carry the program and its frames of locals per line', () => {
  const result = exportRecords(records.slice(0, 3), { format: 'cwm', out: tmp() });
  const row = readJsonl(result.files[0]!.path)[0]! as { code: string; frames: { line: number; source: string; locals: Record<string, string> }[] };
  assert.ok(row.code.startsWith('def '));
  assert.equal(row.frames[0]!.line, 2);
  assert.ok('x' in row.frames[0]!.locals);
});
