// Locals named like Object.prototype members (`__proto__`, `constructor`,
// `toString`, `hasOwnProperty`) through the real tracer and the real adapter
// over DAP: shown, watched and evaluated like any other name. And a watch that
// would build a 40 MB string is answered with a refusal, not built.
import { after, afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { closePool, launch, locals, move, program, startAdapter, where, type Adapter } from './harness';

const NAMES = program('dbg_names.py');
let current: Adapter | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});
after(closePool);

async function atReturn(): Promise<{ a: Adapter; frameId: number }> {
  const a = (current = await startAdapter());
  await launch(a, { program: NAMES, entry: 'names(3)' });
  while ((await where(a)).line !== 6) await move(a, 'next');
  return { a, frameId: (await where(a)).frames[0]!.id };
}

test('locals named __proto__, constructor, toString and hasOwnProperty are listed with their recorded values', { timeout: 60_000 }, async () => {
  const { a } = await atReturn();
  const vars = await locals(a);
  assert.deepEqual(
    Object.keys(vars)
      .filter((k) => k !== 'n')
      .sort(),
    ['__proto__', 'constructor', 'hasOwnProperty', 'toString'],
  );
  const value = (name: string) => (Object.hasOwn(vars, name) ? vars[name]!.value : `(no ${name})`);
  assert.equal(value('__proto__'), '3');
  assert.equal(value('constructor'), '[3, 4]');
  assert.equal(value('toString'), "'hi'");
  assert.equal(value('hasOwnProperty'), '4');
});

test('watches on those names evaluate the recorded values, and calling them runs nothing', { timeout: 60_000 }, async () => {
  const { a, frameId } = await atReturn();
  const ev = (expression: string) => a.dc.evaluateRequest({ expression, frameId, context: 'watch' });
  assert.equal((await ev('__proto__ + hasOwnProperty')).body.result, '7');
  assert.equal((await ev('constructor[1]')).body.result, '4');
  assert.equal((await ev('toString * 2')).body.result, "'hihi'");
  await assert.rejects(ev('valueOf'), /name 'valueOf' is not recorded at this step/);
  await assert.rejects(ev('toString()'), /'toString\(\)' is not available/);
});

test('a watch that would build a 40 MB string is refused with the bound', { timeout: 60_000 }, async () => {
  const { a, frameId } = await atReturn();
  await assert.rejects(
    a.dc.evaluateRequest({ expression: 'toString * 20000000', frameId, context: 'watch' }),
    /the result would be a string of 40000000 characters, more than the 100000 a watch expression may build/,
  );
  // The adapter is free: the next request is answered.
  assert.equal((await a.dc.evaluateRequest({ expression: 'len(toString)', frameId, context: 'watch' })).body.result, '2');
});
