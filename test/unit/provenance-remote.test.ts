// `?token=…` and `user:pass@` in git remotes never reach provenance: a real
// git repository, its real `origin`, discovered and harvested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main';
import { gitEnv } from '../../src/engine/child-env';
import { readStore, STORE_FILE } from '../../src/engine/dataset/store';
import { discoverProject, publicRemote } from '../../src/engine/harvest/project';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-remote-'));

function repoWithOrigin(origin: string): string {
  const repo = tmp();
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: repo, env: gitEnv(process.env), stdio: 'pipe' })
      .toString()
      .trim();
  git('init', '-q');
  git('remote', 'add', 'origin', origin);
  assert.equal(git('remote', 'get-url', 'origin'), origin, 'git keeps the URL as given');
  return repo;
}

test('userinfo, query string and fragment of the origin URL are stripped from the discovered repository', async () => {
  const repo = repoWithOrigin('https://x:secret@example.invalid/r.git?token=abc#access_token=def');
  const project = await discoverProject(repo);
  assert.equal(project.repository, 'https://example.invalid/r.git');
});

test('remote URLs of every shape keep what identifies the repository and lose what authenticates', () => {
  const cases: [string, string][] = [
    ['https://oauth2:glpat-XXXXXXXXXXXX@gitlab.example.invalid/a/b.git', 'https://gitlab.example.invalid/a/b.git'],
    ['https://ghs_token@github.com/org/repo.git', 'https://github.com/org/repo.git'],
    ['https://github.com/org/repo.git?private_token=abc', 'https://github.com/org/repo.git'],
    ['ssh://git@host.invalid:2222/r.git', 'ssh://git@host.invalid:2222/r.git'],
    ['ssh://deploy:pw@host.invalid/r.git', 'ssh://host.invalid/r.git'],
    ['git@github.com:org/repo.git', 'git@github.com:org/repo.git'],
    ['deploytoken@github.com:org/repo.git', 'github.com:org/repo.git'],
    ['/srv/git/repo.git', '/srv/git/repo.git'],
    ['https://host.invalid/ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8/r.git', 'https://host.invalid/REDACTED_GITHUB_TOKEN/r.git'],
  ];
  for (const [remote, kept] of cases) assert.equal(publicRemote(remote), kept, remote);
});

test('a harvest of a repository whose remote carries a token stores provenance without it', async () => {
  const repo = repoWithOrigin('https://x:secret@example.invalid/r.git?token=abc');
  fs.writeFileSync(path.join(repo, 'calc.py'), 'def add(a, b):\n    return a + b\n');
  fs.writeFileSync(
    path.join(repo, 'test_calc.py'),
    'import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n',
  );
  const out = tmp();
  let stderr = '';
  const sink = (append: (s: string) => void) => new Writable({ write: (chunk, _enc, cb) => (append(String(chunk)), cb()) });
  const code = await main(['harvest', repo, '--out', out, '--quiet', '--no-answers', '--runner', 'unittest'], {
    stdout: sink(() => undefined),
    stderr: sink((s) => (stderr += s)),
    env: process.env,
    cwd: repo,
    signal: new AbortController().signal,
  });
  assert.equal(code, 0, stderr);
  const records = readStore(out).items;
  assert.ok(records.length >= 1, 'add(2, 3) was kept');
  for (const r of records) assert.equal(r.provenance.repository, 'https://example.invalid/r.git');
  const written = fs.readdirSync(out).filter((f) => f.endsWith('.json') || f.endsWith('.md') || f === STORE_FILE);
  for (const f of written) {
    const text = fs.readFileSync(path.join(out, f), 'utf8');
    assert.ok(!text.includes('secret@') && !text.includes('token=abc'), `${f} holds the remote's credentials`);
  }
});
