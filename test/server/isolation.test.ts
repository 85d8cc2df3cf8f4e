// The engine server says, once per session, when code ran without the OS
// sandbox (docs/security.md), and says nothing when it did run sandboxed.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { TraceResultSchema } from '../../src/server/protocol';
import { startServer } from './lsp-client';

const ws = mkdtempSync(path.join(tmpdir(), 'ev-isolation-'));
const file = path.join(ws, 'prog.py');
const source = 'def double(x):\n    return 2 * x\n';
writeFileSync(file, source);
const uri = pathToFileURL(file).href;

async function traceTwice(env: Record<string, string>): Promise<string[]> {
  const server = await startServer({ rootPath: ws, env });
  try {
    await server.open(file, source);
    for (const entry of ['double(2)', 'double(3)']) {
      const run = TraceResultSchema.parse(await server.connection.sendRequest('execverify/trace', { uri, entry }));
      assert.equal(run.outcome, entry === 'double(2)' ? 'returned 4' : 'returned 6');
    }
    return server.notifications
      .filter((n) => n.method === 'execverify/notice')
      .map((n) => (n.params as { message: string }).message)
      .filter((m) => /ISOLATED/.test(m));
  } finally {
    await server.close();
  }
}

test('code traced without the sandbox is said to be NOT ISOLATED, once per session', async () => {
  const notices = await traceTwice({ EXECVERIFY_SANDBOX: 'off' });
  assert.equal(notices.length, 1, notices.join('\n'));
  assert.match(notices[0]!, /NOT ISOLATED .*seccomp filter only/);
  assert.match(notices[0]!, /bubblewrap/);
});

test('code traced in the sandbox brings no isolation notice', async () => {
  assert.deepEqual(await traceTwice({}), []);
});
