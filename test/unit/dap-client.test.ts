// DapClient's waits: one left pending when the connection fails (a tracer
// halted in the middle of a step) is never an unhandled rejection, and one
// that is awaited still rejects with the connection's end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { DapClient, DapError } from '../../src/engine/dap/client';

test('a wait nobody awaits any more is not an unhandled rejection when the connection fails; an awaited one rejects', async () => {
  const dap = new DapClient(new PassThrough(), new PassThrough());
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    // As a tracer's step does: the wait is set up, then the request it waits on fails first.
    void dap.waitFor('stopped');
    const awaited = dap.waitFor('stopped');
    const request = dap.request('stepIn', { threadId: 1 });
    dap.fail(new Error('cancelled'));
    await assert.rejects(request, (e: unknown) => e instanceof DapError && e.message === 'stepIn: cancelled');
    await assert.rejects(awaited, (e: unknown) => e instanceof DapError && e.message === 'waiting for stopped: cancelled');
    // After the connection failed, a new wait rejects at once, and is handled too.
    void dap.waitFor('terminated');
    // Unhandled rejections are reported after the microtask queue drains: let a macrotask pass.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
