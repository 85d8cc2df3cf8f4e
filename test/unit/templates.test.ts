// Prompt templates: the built-in data files, user overrides by name, the
// code-first rule, and the official CRUXEval prompt shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILTIN_TEMPLATES, TemplateSchema, loadTemplates, ordinal, renderPrompts, type Template } from '../../src/engine/model/templates';
import { asText } from '../../src/engine/model/prompt';
import { parseAnswers } from '../../src/engine/model/answers';
import type { Question } from '../../src/engine/questions';

const fsFiles = { list: (d: string) => readdir(d), read: (p: string) => readFile(p, 'utf8') };
const CODE = 'def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n';
const QS: Question[] = [
  { kind: 'output', id: 'output', call: 'f([1, 2])', truth: { value: { repr: '3', type: 'int', literal: true } } },
  { kind: 'next_line', id: 'next_line:3:1', fn: 'f', frame: 0, line: 3, lineText: 'for x in xs:', k: 1, truth: { line: 4, text: 'total += x' } },
  {
    kind: 'state',
    id: 'state:4:2:total',
    fn: 'f',
    frame: 0,
    line: 4,
    lineText: 'total += x',
    k: 2,
    var: 'total',
    truth: { repr: '3', type: 'int', literal: true },
  },
];
const byName = (name: string): Template => BUILTIN_TEMPLATES.find((t) => t.name === name)!;

test('every built-in template file is versioned and valid', () => {
  const dir = join(__dirname, '..', '..', 'src', 'engine', 'model', 'templates');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.equal(files.length, BUILTIN_TEMPLATES.length);
  for (const f of files) {
    const t = TemplateSchema.parse(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    assert.ok(t.version >= 1, f);
  }
  assert.deepEqual(BUILTIN_TEMPLATES.map((t) => t.name).sort(), [
    'cruxeval-input',
    'cruxeval-output',
    'execverify',
    'execverify-authors',
    'next-step',
    'predict-test',
    'reval',
  ]);
});

test('ExecVerify mixed prompt: Question1 is the assertion, then numbered questions, code before questions', () => {
  const { prompts } = renderPrompts(byName('execverify'), QS, { code: CODE, call: 'f([1, 2])' });
  assert.equal(prompts.length, 1);
  const text = asText(prompts[0]!.prompt);
  assert.match(text, /Question1: Fill the assertion statement\.\nassert f\(\[1, 2\]\) == \?\?/);
  assert.match(text, /Question2: .*line 3 `for x in xs:` has run for the 1st time/);
  assert.match(text, /Question3: .*`total` right after line 4 `total \+= x` has run for the 2nd time/);
  assert.ok(text.indexOf('total = 0') < text.indexOf('Question1: Fill'));
  assert.equal(prompts[0]!.template, 'execverify@1');
  assert.deepEqual(
    prompts[0]!.questions.map((q) => q.id),
    QS.map((q) => q.id),
  );
});

test('prompts about the same code share everything before the questions', () => {
  const a = asText(renderPrompts(byName('execverify'), QS.slice(0, 2), { code: CODE, call: 'f([1, 2])' }).prompts[0]!.prompt);
  const b = asText(renderPrompts(byName('execverify'), [QS[0]!, QS[2]!], { code: CODE, call: 'f([1, 2])' }).prompts[0]!.prompt);
  let i = 0;
  while (a[i] === b[i]) i++;
  assert.ok(a.slice(0, i).includes(CODE.trimEnd()), 'the shared prefix holds the code');
  const reval = renderPrompts(byName('reval'), QS, { code: CODE, call: 'f([1, 2])' }).prompts.map((p) => asText(p.prompt));
  assert.equal(reval.length, 3, 'REval asks one question per prompt');
  const head = reval[0]!.slice(0, reval[0]!.indexOf('[/PYTHON]'));
  for (const p of reval) assert.ok(p.startsWith(head));
});

test('CRUXEval prompts have the official shape and stop at [/ANSWER]', () => {
  const out = renderPrompts(byName('cruxeval-output'), QS, { code: CODE }).prompts[0]!;
  assert.equal(out.prompt.kind, 'text');
  assert.ok(asText(out.prompt).endsWith(`[PYTHON]\n${CODE.trimEnd()}\nassert f([1, 2]) == ??\n[/PYTHON]\n[ANSWER]\n`));
  assert.deepEqual(out.stop, ['[/ANSWER]']);
  const input: Question = {
    kind: 'input',
    id: 'input',
    call: 'f([1, 2])',
    outputRepr: '3',
    truth: { code: CODE, fn: 'f', output: { repr: '3', type: 'int', literal: true } },
  };
  const inp = renderPrompts(byName('cruxeval-input'), [input], { code: CODE }).prompts[0]!;
  assert.ok(asText(inp.prompt).endsWith('assert f(??) == 3\n[/PYTHON]\n[ANSWER]\n'));
  // A completion in the official shape parses back to the answer.
  assert.deepEqual(parseAnswers(inp.format, 'assert f([3]) == 3\n[/ANSWER]'), ['f([3])']);
});

test("the ExecVerify authors' layout: a system turn, a numbered listing ending with the assertion, a worked example, reasoning before the answer, runs counted 'for the 2 time'", () => {
  const t = byName('execverify-authors');
  const { prompts } = renderPrompts(t, QS, { code: CODE, call: 'f([1, 2])' });
  assert.equal(prompts.length, 1);
  const p = prompts[0]!.prompt;
  assert.equal(p.kind, 'chat');
  const messages = p.kind === 'chat' ? p.messages : [];
  assert.equal(messages[0]!.role, 'system');
  const user = messages[1]!.content;
  // The program to simulate is the last listing: its lines numbered, the assertion its last line.
  const listing = user.slice(user.lastIndexOf('```python'));
  assert.match(
    listing,
    /1 {2}def f\(xs\):\n2 {6}total = 0\n3 {6}for x in xs:\n4 {10}total \+= x\n5 {6}return total\n6 {2}assert f\(\[1, 2\]\) == \?\?\?\?\n```/,
  );
  // One worked example before it, with its reasoning block and its answers.
  assert.ok(user.indexOf('<reasoning>') < user.indexOf('<answer>') && user.indexOf('</answer>') < user.lastIndexOf('```python'));
  assert.match(
    user,
    /Question1: Fill the assertion statement\.\nQuestion2: Which line is executed next after line 3 `for x in xs:` is executed for the 1 time\?\nQuestion3: What are the value and type of `total` after line 4 `total \+= x` is executed for the 2 time\?$/,
  );
  assert.equal(prompts[0]!.format, 'execverify');
  // A response in that layout is read by the same parser: the worked example's answer block is not the response's.
  const response = '<reasoning>\ntotal goes 0, 1, 3.\n</reasoning>\n<answer>\nassert f([1, 2]) == 3\ntotal += x\n3; int\n</answer>';
  assert.deepEqual(parseAnswers('execverify', response), ['3', 'total += x', '3; int']);
});

test('the next-step prompt numbers the code, states the stop and asks for JSON', () => {
  const { prompts, skipped } = renderPrompts(byName('next-step'), QS, {
    code: CODE,
    call: 'f([1, 2])',
    stop: { line: 4, lineText: 'total += x', k: 2, locals: 'xs = [1, 2], total = 1, x = 2' },
  });
  assert.deepEqual(
    skipped.map((q) => q.kind),
    ['output'],
  );
  const p = prompts[0]!;
  assert.equal(p.structured, true);
  assert.equal(p.format, 'next_step_json');
  const text = asText(p.prompt);
  assert.match(text, /4 {2}\s*total \+= x/);
  assert.match(text, /stopped at line 4 `total \+= x`, which is about to run for the 2nd time/);
  assert.match(text, /- total: value and type right after line 4 runs\./);
  assert.match(text, /^You are watching a Python program run in a debugger\./);
  assert.match(text, /```python\n/);
  // A C trace's stop (a live lldb session): the same prompt, naming its language and fencing the code as C.
  const c = asText(
    renderPrompts(byName('next-step'), QS, { code: CODE, language: 'c', stop: { line: 4, lineText: 'x', k: 1, locals: '' } }).prompts[0]!.prompt,
  );
  assert.match(c, /^You are watching a C program run in a debugger\./);
  assert.match(c, /```c\n/);
});

test('placeholder values are inserted literally, never re-expanded', () => {
  const code = 'def f():\n    return "{{questions}}"\n';
  const text = asText(renderPrompts(byName('execverify'), QS.slice(0, 1), { code, call: 'f()' }).prompts[0]!.prompt);
  assert.ok(text.includes('return "{{questions}}"'));
});

test('a user directory overrides a template by name and adds new ones', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-templates-'));
  const mine = { ...byName('execverify'), version: 7, user: 'Mine.\n{{code}}\n{{questions}}' };
  writeFileSync(join(dir, 'execverify.json'), JSON.stringify(mine));
  writeFileSync(join(dir, 'terse.json'), JSON.stringify({ ...mine, name: 'terse', version: 1 }));
  const loaded = await loadTemplates(dir, fsFiles);
  assert.ok(loaded.ok);
  if (!loaded.ok) return;
  assert.deepEqual(loaded.overridden, ['execverify']);
  assert.equal(loaded.templates.get('execverify')!.version, 7);
  assert.ok(loaded.templates.has('terse'));
  assert.ok(loaded.templates.has('reval'), 'built-ins not overridden stay');
  const p = renderPrompts(loaded.templates.get('execverify')!, QS, { code: CODE, call: 'f([1, 2])' }).prompts[0]!;
  assert.equal(p.template, 'execverify@7');
});

test('a bad user template is an error value naming the file and the rule', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-templates-'));
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...byName('reval'), name: 'bad', user: '{{questions}}\n{{code}}' }));
  const loaded = await loadTemplates(dir, fsFiles);
  assert.equal(loaded.ok, false);
  if (!loaded.ok) assert.match(loaded.error, /bad\.json.*must come after the code/);
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...byName('reval'), name: 'bad', user: '{{code}} {{secret}} {{questions}}' }));
  const again = await loadTemplates(dir, fsFiles);
  assert.equal(again.ok, false);
  if (!again.ok) assert.match(again.error, /unknown placeholder \{\{secret\}\}/);
  writeFileSync(join(dir, 'bad.json'), '{not json');
  assert.equal((await loadTemplates(dir, fsFiles)).ok, false);
  const missing = await loadTemplates(join(dir, 'nope'), fsFiles);
  assert.equal(missing.ok, false);
});

test('ordinals', () => {
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal), [
    '1st',
    '2nd',
    '3rd',
    '4th',
    '11th',
    '12th',
    '13th',
    '21st',
    '22nd',
    '101st',
    '111th',
  ]);
});
