// Harvest building blocks: credential scanning and redaction, structural
// difficulty on real traces, pass-rate bands, dedup keys, progress output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactCredentials, scanCredentials } from '../../src/engine/harvest/credentials';
import { histogram, inBand, parsePassBand, structuralCounts, structuralScore } from '../../src/engine/harvest/difficulty';
import { traceFrames } from '../../src/engine/dataset/sample';
import { candidateKey, nearKey } from '../../src/engine/harvest/pipeline';
import { streamProgress } from '../../src/engine/harvest/progress';
import { detectLicense, isTestPath } from '../../src/engine/harvest/project';
import { TracerPool } from '../../src/engine/trace/runner';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Assembled at run time so this file itself holds no credential-shaped literal.
const fake = {
  aws: 'AKIA' + 'Q3EXAMPLE7HX2LMNOP'.slice(0, 16),
  github: 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
  openai: 'sk-' + 'proj-' + 'Xk29fLq0Zr8TnB4vWm7cYp3sHd6gJa1e',
  slack: 'xox' + 'b-123456789012-abcdefghijkl',
  google: 'AIza' + 'SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY',
  jwt: 'eyJ' + 'hbGciOiJIUzI1NiJ9.eyJ' + 'zdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  key: '-----BEGIN ' + 'RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----',
};

test('credentials of every kind are found, and the finding never holds the secret', () => {
  const cases: [string, string][] = [
    [`key = "${fake.aws}"`, 'aws_access_key'],
    [`TOKEN = '${fake.github}'`, 'github_token'],
    [`client(api="${fake.openai}")`, 'openai_key'],
    [`hook = "${fake.slack}"`, 'slack_token'],
    [`maps("${fake.google}")`, 'google_api_key'],
    [`auth = "${fake.jwt}"`, 'jwt'],
    [`PEM = """${fake.key}"""`, 'private_key'],
    ['DB = "postgresql://admin:Zq8rT2vLw9pK4xN7@db:5432/x"', 'url_password'],
    ['password = "h7Gq2!mZp0vX"', 'password_assignment'],
  ];
  for (const [text, kind] of cases) {
    const found = scanCredentials(text);
    assert.deepEqual(
      found.map((f) => f.kind),
      [kind],
      text,
    );
    assert.deepEqual(Object.keys(found[0]!).sort(), ['index', 'kind', 'length']);
    assert.ok(found[0]!.length >= 8, 'the span covers the secret');
  }
});

test('ordinary code and placeholders are not credentials', () => {
  const clean = [
    'token = tokens[0]',
    'password = get_password()',
    'password = "changeme"',
    'url = "https://user:${PASSWORD}@host/"',
    'url = "https://example.com/a:b@c"',
    'secret = "aaaaaaaaaaaa"',
    'def heappush(heap, item):\n    heap.append(item)',
    'sk-learn is a library',
    'SPLIT_RE = r"(?:\\\\s+|[-—])"',
  ];
  for (const text of clean) assert.deepEqual(scanCredentials(text), [], text);
});

test('redaction replaces every secret with a plain word and keeps the code valid', () => {
  const code = `URL = "postgresql://app:Zq8rT2vLw9pK4xN7@db/x"\nKEY = "${fake.aws}"\n`;
  const out = redactCredentials(code);
  assert.equal(out, 'URL = "postgresql://app:REDACTED_URL_PASSWORD@db/x"\nKEY = "REDACTED_AWS_ACCESS_KEY"\n');
  assert.deepEqual(scanCredentials(out), []);
});

test('structural difficulty grows with what there is to simulate', async () => {
  const pool = new TracerPool({ size: 1 });
  try {
    const source = 'def f(n):\n    total = 0\n    for i in range(n):\n        if i % 2:\n            total += i\n    return total\n';
    const small = await pool.trace({ path: 'f.py', source, entry: { kind: 'call', expr: 'f(1)' } });
    const big = await pool.trace({ path: 'f.py', source, entry: { kind: 'call', expr: 'f(6)' } });
    const a = structuralCounts(small, 2);
    const b = structuralCounts(big, 2);
    assert.equal(b.loopIterations, 6, 'one back edge per iteration (5 body runs + loop exit check)');
    assert.ok(b.steps > a.steps);
    assert.ok(b.branches > a.branches, `branches ${a.branches} -> ${b.branches}`);
    assert.equal(b.nesting, 2);
    assert.ok(b.distinctValues > a.distinctValues);
    assert.ok(structuralScore(b) > structuralScore(a));
    assert.ok(structuralScore(b) < 1 && structuralScore(a) > 0);
    const frames = traceFrames(big, 3);
    assert.equal(frames.length, 3);
    assert.deepEqual(
      frames.map((f) => f.line),
      [2, 3, 4],
    );
    assert.equal(frames[1]!.locals.total, '0');
    assert.equal(frames[0]!.source, '    total = 0');
  } finally {
    await pool.close();
  }
});

test('pass-rate bands and the difficulty histogram', () => {
  assert.deepEqual(parsePassBand('0.1,0.9'), { min: 0.1, max: 0.9 });
  assert.match(String(parsePassBand('0.9,0.1')), /MIN,MAX/);
  assert.match(String(parsePassBand('2')), /MIN,MAX/);
  assert.equal(inBand(0.1, { min: 0.1, max: 0.9 }), true);
  assert.equal(inBand(1, { min: 0.1, max: 0.9 }), false);
  assert.deepEqual(histogram([0, 0.05, 0.5, 0.99, 1]), [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
});

test('near-duplicate keys ignore the function name but not the arguments', () => {
  assert.equal(nearKey('h', 'f(1, 2)'), nearKey('h', 'g(1, 2)'));
  assert.notEqual(nearKey('h', 'f(1, 2)'), nearKey('h', 'f(1, 3)'));
  assert.notEqual(nearKey('h', 'f(1)'), nearKey('other', 'f(1)'));
  assert.notEqual(candidateKey({ file: 'a.py', function: 'f', entry: 'f(1)' }), candidateKey({ file: 'b.py', function: 'f', entry: 'f(1)' }));
});

test('progress draws a bar on a terminal and plain lines in logs', () => {
  let t = 0;
  const tty: string[] = [];
  const p = streamProgress({ write: (s: string) => tty.push(s), isTTY: true, columns: 80 }, () => t);
  p.stage('trace', 10);
  t = 500;
  p.tick(5);
  p.done('5 kept');
  assert.match(tty[0]!, /^\rtrace \[#{12}\.{12}\] 5\/10/);
  assert.equal(tty[1], '\r\x1b[Ktrace: 5 kept (0.5s)\n');
  const log: string[] = [];
  t = 0;
  const q = streamProgress({ write: (s: string) => log.push(s) }, () => t);
  q.stage('capture');
  t = 10_000;
  q.tick(3);
  t = 12_000;
  q.tick(4); // within 5 s of the last line: not printed
  q.done('ok');
  assert.deepEqual(log, ['capture 3 10s\n', 'capture: ok (12.0s)\n']);
});

test('project discovery: test paths and the license', () => {
  assert.ok(isTestPath('tests/helpers.py'));
  assert.ok(isTestPath('test_x.py'));
  assert.ok(!isTestPath('src/testing_tools.py'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-lic-'));
  assert.equal(detectLicense(dir), null);
  fs.writeFileSync(path.join(dir, 'LICENSE'), '                                 Apache License\n                           Version 2.0, January 2004\n');
  assert.equal(detectLicense(dir), 'Apache-2.0');
});
