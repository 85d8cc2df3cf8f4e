// The credential scan beyond whole tokens: keys split over concatenated string
// literals, short low-entropy passwords assigned to password names, and the
// code that must not be flagged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { findSecrets, redactCredentials, scanCredentials } from '../../src/engine/harvest/credentials';
import { resolvePython } from '../../src/engine/python';

// Assembled at run time so this file itself holds no credential-shaped literal.
const openaiTail = 'Xk29fLq0Zr8TnB4vWm7cYp3sHd6gJa1e';
const githubTail = 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
const q = (s: string) => JSON.stringify(s);

const kinds = (text: string) => scanCredentials(text).map((f) => f.kind);

test('a key split over string literals joined with + is found', () => {
  assert.deepEqual(kinds(`KEY = ${q('sk-')} + ${q(openaiTail)}`), ['openai_key']);
  assert.deepEqual(kinds(`KEY = 'sk-proj-' + 'Xk29fLq0' + 'Zr8TnB4vWm7cYp3sHd6g'`), ['openai_key']);
});

test('a key split by implicit concatenation, on one line or over lines in brackets, is found', () => {
  assert.deepEqual(kinds(`TOKEN = ${q('ghp_')} ${q(githubTail)}`), ['github_token']);
  assert.deepEqual(kinds(`TOKEN = (\n    ${q('ghp_' + githubTail.slice(0, 10))}\n    ${q(githubTail.slice(10))}\n)`), ['github_token']);
  assert.deepEqual(kinds(`DB = "postgresql://admin:" "Zq8rT2vLw9pK4xN7@db/x"`), ['url_password']);
});

test('redacting a split key leaves one valid literal, and the code still runs', () => {
  const code = `KEY = ${q('sk-')} + ${q(openaiTail)}\nTOKEN = ('ghp_'\n         '${githubTail}')\nprint(len(KEY), TOKEN)\n`;
  const out = redactCredentials(code);
  assert.equal(out, 'KEY = "REDACTED_OPENAI_KEY"\nTOKEN = (\'REDACTED_GITHUB_TOKEN\')\nprint(len(KEY), TOKEN)\n');
  assert.deepEqual(scanCredentials(out), []);
  const run = spawnSync(resolvePython(undefined, process.env), ['-c', out], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, '19 REDACTED_GITHUB_TOKEN\n');
});

test('low-entropy passwords assigned to password names are found', () => {
  const cases = [
    'password = "hunter2"',
    "PASSWD = 'letmein'",
    'db_pass: str = "s3cret!"',
    'connect(host="db", password="abc123")',
    'config = {"password": "letmein"}',
    'ADMIN_PWD = "1234"',
    'self.passphrase = "open sesame"'.replace(' sesame', 'sesame'),
  ];
  for (const text of cases) assert.deepEqual(kinds(text), ['password_literal'], text);
  assert.equal(redactCredentials('password = "hunter2"'), 'password = "REDACTED_PASSWORD_LITERAL"');
});

test('ordinary code near the words password and token is not flagged', () => {
  const clean = [
    'password_length = 8',
    'token = tokenize(x)',
    'tokens = "a b c".split()',
    'password = getpass.getpass()',
    'password = os.environ["DB_PASSWORD"]',
    'password = ""',
    'password = "changeme"',
    'if password == "hunter2":',
    'PASSWORD_PROMPT = "Password:"',
    'password_env = "DB_PASSWORD"',
    'bypass = "--no-verify"',
    'compass = "north-east"',
    'passed = "yes"',
    'pwd = "/home/user/project"',
    'password = "${DB_PASSWORD}"',
    "msg = \"don't\" + 'panic'",
    'x = "sk-" + "learn"',
    'parts = ("ab" "cd")',
  ];
  for (const text of clean) assert.deepEqual(scanCredentials(text), [], text);
});

test('findSecrets adds the values of environment secrets, found wherever they occur', () => {
  const secret = { name: 'EXECVERIFY_FAKE_TOKEN', value: 'q9Zr.unknown.77kk' };
  const text = `x = "${secret.value}"\ny = x + "${secret.value}"`;
  const found = findSecrets(text, [secret]);
  assert.deepEqual(
    found.map((f) => f.kind),
    ['environment_secret', 'environment_secret'],
  );
  assert.equal(redactCredentials(text, found), 'x = "REDACTED_ENVIRONMENT_SECRET"\ny = x + "REDACTED_ENVIRONMENT_SECRET"');
  assert.deepEqual(findSecrets(text), [], 'without the environment nothing says it is a secret');
});
