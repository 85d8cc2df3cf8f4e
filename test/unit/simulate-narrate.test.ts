// `execverify narrate`: a model (the test server) narrates a recorded run and
// every claim of its narration gets the verdict the run implies; without an
// endpoint the template narrator's narration checks as verified; a narration
// from a file is checked the same way.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { noModelEnv, runCli } from '../support/cli';

const dir = mkdtempSync(join(tmpdir(), 'ev-narrate-'));
writeFileSync(join(dir, 'evens.py'), 'def f(xs):\n    total = 0\n    for x in xs:\n        if x % 2 == 0:\n            total += x\n    return total\n');
writeFileSync(join(dir, 'echo.py'), 'n = int(input())\nfor i in range(n):\n    print(input().upper())\n');
writeFileSync(join(dir, 'in.txt'), '2\nab\ncd\n');
writeFileSync(join(dir, 'mine.txt'), 'The loop on line 3 runs 3 times. The function returns `7`. It is a nice function.');

/** The model's narration of f([1, 2, 4]): each sentence with the verdict the run implies. */
const MODEL: [string, string][] = [
  ['After line 2, `total` is `0`.', 'true'],
  ['The condition on line 4 is false the 1st time.', 'true'],
  ['After line 5 runs for the 1st time, `total` is `2`.', 'true'],
  ['After line 5, `total` is `6`.', 'unverifiable'],
  ['The loop on line 3 runs 2 times.', 'false'],
  ['The function returns `6`.', 'true'],
];

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer({ script: () => ({ text: `Let me walk through it.\n${MODEL.map(([s]) => s).join('\n')}\nDone.` }) });
});
after(async () => server.close());

const cli = (...argv: string[]) => runCli(argv, { cwd: dir, env: noModelEnv() });

test('a model narration: every claim gets the verdict the run implies', async () => {
  const r = await cli('narrate', 'evens.py', '-e', 'f([1, 2, 4])', '--base-url', server.url, '--model', 'narrator', '--json');
  assert.equal(r.code, 0, r.err);
  const result = JSON.parse(r.out) as {
    by: { kind: string };
    check: { verdict: string; claims: { sentence: string; verdict: string; truth?: string }[]; marked: string };
  };
  assert.equal(result.by.kind, 'model');
  assert.deepEqual(
    result.check.claims.map((c) => [c.sentence, c.verdict]),
    MODEL,
  );
  assert.equal(result.check.verdict, 'rejected');
  assert.match(result.check.marked, /The loop on line 3 runs 2 times\. \[false: the run says 3\]/);
  const prompt = ((server.requests.at(-1)!.body?.messages ?? []) as { content: string }[]).at(-1)!.content;
  assert.match(prompt, /entered as f\(\[1, 2, 4\]\)/);
  assert.match(prompt, /def f\(xs\):\n {4}total = 0/);
});

test('without an endpoint the template narrator narrates a stdin script, and it checks as verified', async () => {
  const r = await cli('narrate', 'echo.py', '--script', '--stdin', 'in.txt');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^narrated by: the template narrator \(no model\)\n/);
  assert.match(r.out, /true {3}The loop on line 2 runs 2 times\.\n/);
  assert.match(r.out, /true {3}The output is `"AB\\nCD"`\.\n/);
  assert.match(r.out, /\nverified: \d+ true, 0 false, 0 unverifiable\n$/);
});

test('a narration from a file is checked; prose is not a claim', async () => {
  const r = await cli('narrate', 'evens.py', '-e', 'f([1, 2, 4])', '--narration', 'mine.txt');
  assert.equal(r.code, 0, r.err);
  assert.equal(
    r.out,
    'narrated by: mine.txt\n' +
      '  true   The loop on line 3 runs 3 times.\n' +
      '  FALSE  The function returns `7`.  (the run: 6)\n' +
      'rejected: 1 true, 1 false, 0 unverifiable\n',
  );
});

test('usage mistakes are one line', async () => {
  assert.match((await cli('narrate', 'evens.py')).err, /say how to run FILE/);
  assert.match((await cli('narrate', 'evens.py', '-e', 'f([])', '--stdin', 'in.txt')).err, /--stdin goes with --script/);
  assert.match((await cli('narrate', 'evens.py', '-e', 'f([])', '--narration', 'nope.txt')).err, /--narration nope\.txt: cannot read it/);
});
