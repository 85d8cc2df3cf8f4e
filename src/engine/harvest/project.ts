// Discovery: what a project directory is (name, git repository and commit,
// license, how many modules and tests) — the provenance every sample carries.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gitEnv } from '../child-env';
import { redactCredentials } from './credentials';

export interface ProjectInfo {
  root: string;
  name: string;
  repository: string | null;
  commit: string | null;
  license: string | null;
  modules: number;
  testFiles: number;
}

const SKIP_DIRS = new Set(['.git', '.hg', '.venv', 'venv', 'env', '__pycache__', 'node_modules', 'build', 'dist', '.tox', '.mypy_cache', 'site-packages']);

export function isTestPath(rel: string): boolean {
  const base = path.basename(rel);
  if (base.startsWith('test_') || base.endsWith('_test.py') || base === 'conftest.py') return true;
  return rel
    .split(/[\\/]/)
    .slice(0, -1)
    .some((p) => p === 'tests' || p === 'test' || p === 'testing');
}

/** Python files under `root` (relative, forward slashes), skipping virtualenvs and caches. */
export function pythonFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name) && !entry.name.startsWith('.')) walk(path.join(dir, entry.name), rel ? `${rel}/${entry.name}` : entry.name);
      } else if (entry.isFile() && entry.name.endsWith('.py')) {
        out.push(rel ? `${rel}/${entry.name}` : entry.name);
      }
    }
  };
  walk(root, '');
  return out;
}

/** A license name from the first lines of a LICENSE file (or pyproject's `license`). */
export function detectLicense(root: string): string | null {
  const candidates = ['LICENSE', 'LICENSE.txt', 'LICENSE.md', 'LICENCE', 'COPYING', 'COPYING.txt'];
  for (const name of candidates) {
    const file = path.join(root, name);
    if (!fs.existsSync(file)) continue;
    const head = fs.readFileSync(file, 'utf8').slice(0, 4000);
    const known: [RegExp, string][] = [
      [/MIT License|Permission is hereby granted, free of charge/i, 'MIT'],
      [/Apache License,?\s+Version 2\.0/i, 'Apache-2.0'],
      [/GNU LESSER GENERAL PUBLIC LICENSE/i, 'LGPL'],
      [/GNU AFFERO GENERAL PUBLIC LICENSE/i, 'AGPL-3.0'],
      [/GNU GENERAL PUBLIC LICENSE\s+Version 3/i, 'GPL-3.0'],
      [/GNU GENERAL PUBLIC LICENSE\s+Version 2/i, 'GPL-2.0'],
      [/Mozilla Public License,? (?:Version )?2\.0/i, 'MPL-2.0'],
      [/PYTHON SOFTWARE FOUNDATION LICENSE/i, 'PSF-2.0'],
      [/Redistribution and use in source and binary forms/i, 'BSD'],
      [/This is free and unencumbered software released into the public domain/i, 'Unlicense'],
    ];
    for (const [pattern, id] of known) if (pattern.test(head)) return id;
    return `see ${name}`;
  }
  const pyproject = path.join(root, 'pyproject.toml');
  if (fs.existsSync(pyproject)) {
    const m = /^\s*license\s*=\s*(?:\{\s*text\s*=\s*)?["']([^"']+)["']/m.exec(fs.readFileSync(pyproject, 'utf8'));
    if (m) return m[1]!;
  }
  return null;
}

export type GitRunner = (args: string[], cwd: string) => Promise<string | null>;

/**
 * Runs git, answering null when git is missing or the directory is not a
 * repository. git gets gitEnv (no token of this process), never prompts, and
 * runs no fsmonitor hook the harvested repository may configure.
 */
export const runGit: GitRunner = (args, cwd) =>
  new Promise((resolve) => {
    execFile('git', ['-c', 'core.fsmonitor=false', ...args], { cwd, timeout: 5000, env: gitEnv(process.env) }, (err, stdout) =>
      resolve(err ? null : stdout.trim() || null),
    );
  });

/**
 * A remote URL as provenance may keep it: no user or password
 * (`https://user:token@host`), no query string or fragment (`?token=…`,
 * `#access_token=…`), and any credential the scan finds in what is left
 * redacted. The SSH user `git@` is a convention, not a secret, and stays.
 */
export function publicRemote(remote: string): string {
  const url = remote.trim();
  let out = url;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      const keepUser = u.username === 'git' && !u.password;
      if (!keepUser) u.username = '';
      u.password = '';
      u.search = '';
      u.hash = '';
      out = u.toString();
    } catch {
      out = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/]*@/i, '$1').replace(/[?#].*$/, '');
    }
  } else {
    // scp-like `user@host:path` (a local path has no `host:` before its first slash)
    const scp = /^(?:([^@/\s]+)@)?([^:/\s]+):(?!\/\/)([^?#]*)/.exec(url);
    if (scp && (scp[1] !== undefined || !/^[A-Za-z]$/.test(scp[2]!))) out = `${scp[1] === 'git' ? 'git@' : ''}${scp[2]}:${scp[3]}`;
  }
  return redactCredentials(out);
}

export async function discoverProject(root: string, git: GitRunner = runGit, name?: string): Promise<ProjectInfo> {
  const abs = path.resolve(root);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) {
    throw new Error(`project directory not found: ${root}`);
  }
  const files = pythonFiles(abs);
  const tests = files.filter(isTestPath).length;
  const top = await git(['rev-parse', '--show-toplevel'], abs);
  const commit = top ? await git(['rev-parse', 'HEAD'], abs) : null;
  const remote = top ? await git(['remote', 'get-url', 'origin'], abs) : null;
  return {
    root: abs,
    name: name ?? path.basename(abs),
    // Without a remote there is nothing public to name: a local path would leak the harvesting machine's layout.
    repository: remote ? publicRemote(remote) : null,
    commit,
    license: detectLicense(abs) ?? (top && top !== abs ? detectLicense(top) : null),
    modules: files.length - tests,
    testFiles: tests,
  };
}
