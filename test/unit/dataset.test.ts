// The canonical record and the append-only store: content addressing,
// validation, duplicates, torn tails, a second writer, and SIGKILL mid-write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { makeRecord, recordId, RecordSchema, splitFor } from '../../src/engine/dataset/record';
import { readStore, repairTail, SampleStore, STORE_FILE } from '../../src/engine/dataset/store';
import { sampleInput, sampleRecord } from '../support/sample-records';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-store-'));

test('the id depends on code, entry and questions, not on formatting', () => {
  const a = sampleRecord(1);
  const b = makeRecord(sampleInput(1, { code: sampleInput(1).code.replace(/\n/g, '   \r\n') + '\n\n' }));
  assert.equal(a.id, b.id);
  assert.notEqual(a.id, sampleRecord(2).id);
  assert.notEqual(a.id, recordId(a.code, a.entry, [...a.questions, { id: 'x', kind: 'coverage' }]));
  assert.notEqual(a.id, recordId(a.code, 'f1(2)', a.questions));
});

test('splits are chosen per function, so one function never lands in two splits', () => {
  const seen = new Map<string, string>();
  let tests = 0;
  for (let n = 0; n < 400; n++) {
    const p = { project: 'p', file: `m${n % 13}.py`, function: `fn${n % 31}` };
    const split = splitFor(p, { validation: 0.1, test: 0.2 });
    const key = `${p.file}:${p.function}`;
    if (seen.has(key)) assert.equal(seen.get(key), split, key);
    seen.set(key, split);
    if (split === 'test') tests += 1;
  }
  assert.ok(tests > 0 && tests < 400, 'both splits are used');
});

test('the store appends valid records once and reads them back after reopening', () => {
  const dir = tmp();
  const store = SampleStore.open(dir);
  const first = store.add(sampleInput(1));
  assert.equal(first.added, true);
  assert.deepEqual(store.add(sampleInput(1)), { added: false, id: sampleRecord(1).id, reason: 'duplicate' });
  assert.equal(store.add(sampleInput(2)).added, true);
  const bad = store.add(sampleInput(3, { prompt: [] }));
  assert.equal(bad.added, false);
  assert.match(bad.added ? '' : (bad.message ?? ''), /prompt/);
  store.close();
  const again = SampleStore.open(dir);
  assert.equal(again.size, 2);
  assert.equal(again.add(sampleInput(2)).added, false);
  assert.equal(again.hasCandidate(sampleRecord(1).hashes.candidate), true);
  again.close();
  const read = readStore(dir);
  assert.deepEqual(read.items.map((r) => r.id).sort(), [sampleRecord(1).id, sampleRecord(2).id].sort());
  assert.equal(read.invalid, 0);
});

test('a torn last line is cut on open and the next record starts on a clean line', () => {
  const dir = tmp();
  const store = SampleStore.open(dir);
  store.add(sampleInput(1));
  store.close();
  const file = path.join(dir, STORE_FILE);
  const whole = fs.readFileSync(file, 'utf8');
  fs.appendFileSync(file, JSON.stringify(sampleRecord(2)).slice(0, 100));
  const reopened = SampleStore.open(dir);
  assert.equal(reopened.repairedBytes, 100);
  assert.equal(fs.readFileSync(file, 'utf8'), whole);
  reopened.add(sampleInput(2));
  reopened.close();
  const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.equal(lines.length, 2);
  for (const line of lines) RecordSchema.parse(JSON.parse(line));
});

test('repairTail also cuts a complete last line that is not JSON, and leaves good files alone', () => {
  const dir = tmp();
  const file = path.join(dir, 'x.jsonl');
  fs.writeFileSync(file, '{"a":1}\n{"b":');
  assert.equal(repairTail(file), 5);
  assert.equal(fs.readFileSync(file, 'utf8'), '{"a":1}\n');
  fs.writeFileSync(file, '{"a":1}\n{"b":\n');
  assert.equal(repairTail(file), 6);
  assert.equal(repairTail(file), 0);
  assert.equal(repairTail(path.join(dir, 'missing.jsonl')), 0);
});

test("a second live writer is refused; a dead writer's lock is taken over", async () => {
  const dir = tmp();
  const sleeper = spawn('sleep', ['30']);
  try {
    fs.writeFileSync(path.join(dir, 'samples.lock'), String(sleeper.pid));
    assert.throws(() => SampleStore.open(dir), /another process \(pid \d+\) is writing/);
  } finally {
    sleeper.kill('SIGKILL');
    await new Promise((r) => sleeper.once('exit', r));
  }
  const store = SampleStore.open(dir);
  assert.equal(store.add(sampleInput(1)).added, true);
  store.close();
  assert.equal(fs.existsSync(path.join(dir, 'samples.lock')), false);
});

test('a writer killed with SIGKILL mid-stream leaves no corrupt or duplicate record', async () => {
  const dir = tmp();
  let total = 0;
  for (let round = 0; round < 2; round++) {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'support', 'store-writer.ts'), dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    // Kill at a point that differs per round: after some records were written.
    await new Promise<void>((resolve) => {
      let seen = 0;
      child.stdout.on('data', (d: Buffer) => {
        seen += d.toString().split('\n').filter(Boolean).length;
        if (seen >= 2 + round) {
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    await new Promise((r) => child.once('exit', r));
    const reopened = SampleStore.open(dir);
    assert.ok(reopened.size > total, `round ${round} added records`);
    total = reopened.size;
    reopened.close();
    const text = fs.readFileSync(path.join(dir, STORE_FILE), 'utf8');
    assert.ok(text.endsWith('\n'));
    const ids = text
      .trimEnd()
      .split('\n')
      .map((line) => RecordSchema.parse(JSON.parse(line)).id);
    assert.equal(new Set(ids).size, ids.length, 'no duplicate ids');
    assert.equal(ids.length, total);
  }
});
