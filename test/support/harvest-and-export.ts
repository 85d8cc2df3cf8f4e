// One process for the Python trainer tests' fixture: harvest the demo project,
// then export it in every format they read (`node --import tsx THIS OUT_DIR`).
import * as path from 'node:path';
import { main } from '../../src/cli/main';

const root = path.resolve(__dirname, '..', '..');
const out = path.resolve(process.argv[2]!);
const store = path.join(out, 'store');
const io = { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: root, signal: new AbortController().signal };
const steps: string[][] = [
  // Everything goes to train (no test split) so each format has one file to read.
  ['harvest', path.join(root, 'examples', 'demo-project'), '--out', store, '--quiet', '--per-function', '3', '--test-fraction', '0'],
  ['export', store, '--format', 'verl', '--out', path.join(out, 'verl')],
  ['export', store, '--format', 'trl', '--out', path.join(out, 'trl')],
  ['export', store, '--format', 'trl', '--parquet', '--out', path.join(out, 'trl_parquet')],
  ['export', store, '--format', 'openrlhf', '--out', path.join(out, 'openrlhf')],
];
(async () => {
  for (const argv of steps) {
    const code = await main(argv, io);
    if (code !== 0) {
      process.stderr.write(`execverify ${argv.join(' ')} exited ${code}\n`);
      process.exit(code);
    }
  }
})();
