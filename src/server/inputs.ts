// Where the input of a traced call comes from: calls to the function found in
// the workspace's tests, the user's earlier entries, and the last run.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { InputCandidate } from './protocol';

export interface SourceFile {
  path: string;
  text: string;
}

/**
 * Calls `fn(...)` (or `something.fn(...)`) in test sources, as entries that run
 * in the function's own module: `fn(...)`. Arguments that span lines are kept
 * when their parentheses balance within a few lines.
 */
export function findTestCalls(fn: string, files: SourceFile[], max = 20): InputCandidate[] {
  const out: InputCandidate[] = [];
  const seen = new Set<string>();
  const call = new RegExp(`(?<![A-Za-z0-9_])(?:[A-Za-z_][A-Za-z0-9_]*\\.)*${escapeRegExp(fn)}\\s*\\(`, 'g');
  for (const file of files) {
    if (!file.text.includes(fn)) continue;
    const lines = file.text.split('\n');
    for (let i = 0; i < lines.length && out.length < max; i++) {
      const line = lines[i] as string;
      if (/^\s*(async\s+)?def\s/.test(line) || /^\s*(from|import)\s/.test(line)) continue;
      call.lastIndex = 0;
      let m: RegExpExecArray | null;
      while ((m = call.exec(line)) !== null) {
        const open = m.index + m[0].length - 1;
        const rest = [line.slice(open), ...lines.slice(i + 1, i + 6)].join('\n');
        const args = balancedArgs(rest);
        if (args === null) continue;
        const entry = `${fn}(${args.replace(/\s*\n\s*/g, ' ').trim()})`;
        if (seen.has(entry)) continue;
        seen.add(entry);
        out.push({ entry, source: 'test', detail: `${file.path}:${i + 1}` });
        if (out.length >= max) break;
      }
    }
  }
  return out;
}

/** The text between the first `(` and its matching `)`, strings kept and comments dropped; null if unbalanced. */
function balancedArgs(text: string): string | null {
  let depth = 0;
  let quote: string | null = null;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== null) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '#') {
      // A comment runs to the end of its line; joined onto one line it would swallow the rest.
      const nl = text.indexOf('\n', i);
      if (nl < 0) return null;
      i = nl - 1;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return out.slice(1);
    }
    out += c;
  }
  return null;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const SKIP_DIRS = new Set(['node_modules', '.git', '.venv', 'venv', '__pycache__', '.execverify', 'dist', 'build', '.tox']);
const TEST_FILE = /^(test_.*|.*_test)\.py$/;

/** Test files under `root` (bounded walk, so a huge workspace cannot stall the server). */
export async function readTestFiles(root: string, maxFiles = 500, maxBytes = 512 * 1024): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  const queue = [root];
  let visited = 0;
  while (queue.length > 0 && files.length < maxFiles && visited < 5000) {
    const dir = queue.shift() as string;
    visited++;
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) queue.push(full);
      } else if (e.isFile() && TEST_FILE.test(e.name)) {
        try {
          const stat = await fs.stat(full);
          if (stat.size > maxBytes) continue;
          files.push({ path: path.relative(root, full), text: await fs.readFile(full, 'utf8') });
        } catch {
          // A file that vanished or cannot be read is simply not a candidate.
        }
      }
    }
  }
  return files;
}
