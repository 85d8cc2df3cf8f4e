// readJsonlRows: a benchmark's JSONL rows through their schema; the first bad
// line (or a missing file) is one error of the caller's type naming file and line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonlRows } from '../../src/engine/eval/jsonl';

class BenchError extends Error {}
const Row = z.object({ id: z.string(), n: z.number() });
const dir = mkdtempSync(join(tmpdir(), 'ev-jsonl-'));
const naming = (file: string) => ({ name: `--data ${file}`, readHint: 'a checkout', lineHint: 'id, n', error: (m: string) => new BenchError(m) });

test('rows in order, blank lines skipped', async () => {
  const file = join(dir, 'ok.jsonl');
  writeFileSync(file, '{"id":"a","n":1}\n\n{"id":"b","n":2}\n');
  assert.deepEqual(await readJsonlRows(file, Row, naming(file)), [
    { id: 'a', n: 1 },
    { id: 'b', n: 2 },
  ]);
});

test('a missing file, a line that is not JSON and a row off the schema: one error each, in the caller type', async () => {
  const missing = join(dir, 'missing.jsonl');
  await assert.rejects(
    readJsonlRows(missing, Row, naming(missing)),
    (e: unknown) => e instanceof BenchError && e.message === `cannot read --data ${missing}: ENOENT (a checkout)`,
  );
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"id":"a","n":1}\n{"id":\n');
  await assert.rejects(
    readJsonlRows(bad, Row, naming(bad)),
    (e: unknown) => e instanceof BenchError && e.message === `--data ${bad} line 2 is not JSON (id, n)`,
  );
  writeFileSync(bad, '{"id":"a","n":"one"}\n');
  await assert.rejects(
    readJsonlRows(bad, Row, { name: bad, error: (m) => new BenchError(m) }),
    (e: unknown) => e instanceof BenchError && /^\S+bad\.jsonl line 1: n: /.test(e.message),
  );
});
