// The hand-written fast check of completion responses must accept only what
// the zod schemas (the schema of record) accept, and parsing must give the same
// result either way: checked here on hand-picked and generated responses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModelError } from '../../src/engine/model/errors';
import { ChatResponseSchema, fastResponseCheck, parseCompletionResponse, TextResponseSchema } from '../../src/engine/model/wire';

/** What parseCompletionResponse must return, computed from zod's output alone. */
function viaZod(response: unknown, chat: boolean, defaultModel: string) {
  const parsed = (chat ? ChatResponseSchema : TextResponseSchema).safeParse(response);
  if (!parsed.success) return undefined;
  const data = parsed.data as {
    model?: string | null;
    choices: { index?: number | null; finish_reason?: string | null; message?: { content?: string | null }; text?: string | null }[];
    usage?: { prompt_tokens?: number | null; completion_tokens?: number | null } | null;
  };
  const choices = data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  return {
    samples: choices.map((c) => ({ text: (chat ? c.message?.content : c.text) ?? '', finishReason: c.finish_reason ?? null })),
    promptTokens: data.usage?.prompt_tokens ?? 0,
    completionTokens: data.usage?.completion_tokens ?? 0,
    model: data.model ?? defaultModel,
  };
}

function agree(response: unknown, chat: boolean): { fast: boolean; zod: boolean } {
  const fast = fastResponseCheck(response, chat);
  const expected = viaZod(response, chat, 'default-model');
  if (fast) assert.ok(expected, `fast check accepted what zod rejects: ${JSON.stringify(response)}`);
  if (typeof response === 'object' && response !== null) {
    if (expected) assert.deepEqual(parseCompletionResponse(response, chat ? 'chat' : 'completions', 'default-model'), expected);
    else
      assert.throws(
        () => parseCompletionResponse(response, chat ? 'chat' : 'completions', 'default-model'),
        (e: unknown) => e instanceof ModelError && e.code === 'bad_response',
      );
  }
  return { fast, zod: expected !== undefined };
}

const chatOk = {
  id: 'x',
  model: 'm',
  choices: [
    { index: 1, message: { role: 'assistant', content: 'second' }, finish_reason: 'length' },
    { index: 0, message: { role: 'assistant', content: 'first' }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
};
const textOk = { model: null, choices: [{ index: 0, text: 'hello', finish_reason: null }], usage: null };

test('the fast check takes ordinary responses and parses them as zod does', () => {
  assert.deepEqual(agree(chatOk, true), { fast: true, zod: true });
  assert.deepEqual(agree(textOk, false), { fast: true, zod: true });
  assert.deepEqual(agree({ choices: [] }, true), { fast: true, zod: true });
  assert.deepEqual(agree({ choices: [{ message: {} }] }, true), { fast: true, zod: true });
  const r = parseCompletionResponse(chatOk, 'chat', 'd');
  assert.deepEqual(
    r.samples.map((s) => s.text),
    ['first', 'second'],
  );
  assert.equal(r.promptTokens, 12);
});

test('whatever the fast check refuses, zod decides (and writes the error)', () => {
  const bad: [unknown, boolean][] = [
    [{}, true],
    [[], true],
    [{ choices: {} }, true],
    [{ choices: [null] }, true],
    [{ choices: [{ index: -1, message: { content: 'a' } }] }, true],
    [{ choices: [{ index: 1.5, message: { content: 'a' } }] }, true],
    [{ choices: [{ index: '0', message: { content: 'a' } }] }, true],
    [{ choices: [{ message: { content: 3 } }] }, true],
    [{ choices: [{ message: null }] }, true],
    [{ choices: [{ message: [] }] }, true],
    [{ choices: [{ text: 'a' }] }, true],
    [{ choices: [{ text: 3 }] }, false],
    [{ choices: [], model: 3 }, true],
    [{ choices: [], usage: { prompt_tokens: -1 } }, true],
    [{ choices: [], usage: { completion_tokens: 2.5 } }, false],
    [{ choices: [], usage: [] }, false],
    [{ choices: [], usage: new Date(0) }, false],
    [{ choices: [{ message: new Map() }] }, true],
    [{ choices: [{ finish_reason: 1, message: { content: '' } }] }, true],
  ];
  for (const [response, chat] of bad) {
    const { fast, zod } = agree(response, chat);
    assert.equal(fast, false, JSON.stringify(response));
    // Where zod accepts what the fast check left to it, parsing still works (checked in agree).
    void zod;
  }
  // Holes and non-plain objects go to zod, which may accept them.
  agree({ choices: [, { message: { content: 'x' } }] }, true);
  agree(Object.assign(Object.create(null), { choices: [] }), true);
  class Custom {
    choices = [];
  }
  agree(new Custom(), true);
});

test('generated responses: the fast check never accepts what zod rejects, and parsing agrees', () => {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const scalars: unknown[] = [undefined, null, 0, 1, -1, 2.5, -0, 1e21, '', 'a', true, false, [], {}, NaN, Infinity];
  const field = (good: unknown[]) => (rnd() < 0.7 ? pick(good) : pick(scalars));
  let accepted = 0;
  for (let i = 0; i < 3000; i++) {
    const chat = rnd() < 0.5;
    const choices = Array.from({ length: Math.floor(rnd() * 3) }, () => {
      const c: Record<string, unknown> = {};
      if (rnd() < 0.8) c.index = field([0, 1, 2, null]);
      if (rnd() < 0.8) c.finish_reason = field(['stop', 'length', null]);
      if (chat && rnd() < 0.9) c.message = rnd() < 0.8 ? { role: 'assistant', content: field(['x', null, '']) } : pick(scalars);
      if (!chat && rnd() < 0.9) c.text = field(['x', null, '']);
      return rnd() < 0.95 ? c : pick(scalars);
    });
    const response: Record<string, unknown> = { choices: rnd() < 0.95 ? choices : pick(scalars) };
    if (rnd() < 0.7) response.model = field(['m', null]);
    if (rnd() < 0.7) response.usage = rnd() < 0.8 ? { prompt_tokens: field([0, 5, null]), completion_tokens: field([0, 7, null]) } : pick(scalars);
    if (agree(response, chat).fast) accepted++;
  }
  // Both accepted and refused responses were exercised.
  assert.ok(accepted > 100 && accepted < 2900, `accepted ${accepted}`);
});
