// The standalone adapter program works over stdio and as a TCP server, as
// other editors (nvim-dap, Emacs dap-mode) run it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { once } from 'node:events';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import { launch, locals, move, program, REPO, type Adapter } from './harness';

const MAIN = path.join(REPO, 'src/adapter/main.ts');
const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import tsx`.trim() };

async function scriptedSession(a: Adapter): Promise<void> {
  const file = program('dbg_loop.py');
  const stop = await launch(a, { program: file, entry: 'accumulate(4)' }, { breakpoints: [{ line: 5, hitCondition: '2' }] });
  assert.equal(stop.body.reason, 'entry');
  await move(a, 'continue');
  assert.equal((await locals(a)).i?.value, '1');
  await move(a, 'stepBack');
  assert.equal((await locals(a)).i?.value, '0');
  const terminated = a.dc.waitForEvent('terminated');
  await a.dc.setBreakpointsRequest({ source: { path: file }, breakpoints: [] });
  await a.dc.continueRequest({ threadId: 1 });
  await terminated;
  assert.ok(a.events.some((e) => e.event === 'output' && e.body.output === 'accumulate(4) returned 6\n'));
}

function tracked(dc: DebugClient): Adapter {
  const events: Adapter['events'] = [];
  const client = dc as unknown as { dispatch(body: string): void };
  const original = client.dispatch.bind(dc);
  client.dispatch = (body: string) => {
    const msg = JSON.parse(body) as { type: string };
    if (msg.type === 'event') events.push(msg as Adapter['events'][number]);
    original(body);
  };
  return { dc, events, close: () => dc.stop() };
}

test('the standalone adapter speaks DAP over stdio', async () => {
  const dc = new DebugClient('node', MAIN, 'execverify', { env, cwd: REPO });
  dc.defaultTimeout = 30_000;
  await dc.start();
  const a = tracked(dc);
  try {
    await scriptedSession(a);
  } finally {
    await a.close();
  }
});

test('the standalone adapter serves sessions on a loopback port with --server', async () => {
  const proc = spawn(process.execPath, [MAIN, '--server=0'], { env, cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [chunk] = (await once(proc.stdout, 'data')) as [Buffer];
    const m = /listening on 127\.0\.0\.1:(\d+)/.exec(chunk.toString());
    assert.ok(m, `unexpected banner: ${chunk.toString()}`);
    const dc = new DebugClient('node', 'unused', 'execverify');
    dc.defaultTimeout = 30_000;
    await dc.start(Number(m[1]));
    const a = tracked(dc);
    try {
      await scriptedSession(a);
    } finally {
      await a.close();
    }
  } finally {
    proc.kill('SIGTERM');
    await once(proc, 'exit');
  }
});

test('the standalone adapter rejects unknown arguments with its usage', async () => {
  const proc = spawn(process.execPath, [MAIN, '--port=3'], { env, cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(proc, 'exit')) as [number];
  assert.equal(code, 2);
  assert.match(stderr, /unknown argument '--port=3'/);
  assert.match(stderr, /--server=PORT/);
});
