// The synthesis prompt: one Spec's constraints in words, the rules a program
// must keep to be a sample (our execution filter drops the rest), and the
// answer format the parser (answer.ts) reads.
import type { ChatMessage } from '../model/prompt';
import type { Constraints, Spec } from './constraints';

/** Bumped whenever the text below changes; part of the response cache key. */
export const SYNTHESIS_PROMPT_VERSION = 'synthesis-prompt@1';

export const SYNTHESIS_SYSTEM =
  'You write small, self-contained Python programs that are used to teach a model to reason about code execution. You follow the constraints and the answer format exactly.';

/** The answer format, stated once: the prompt and docs/synthesis.md say the same. */
export const ANSWER_FORMAT = [
  'Answer format:',
  '1. One fenced ```python block holding the program: the entry function and its helpers, nothing called at the top level, no tests, no prints.',
  '2. Then one fenced ``` block of 3 to 5 example calls of the entry function, one call expression per line, with literal arguments only (numbers, strings, bytes, lists, tuples, dicts, sets, True/False/None).',
  'Anything outside the two blocks is ignored.',
  '',
  'Example:',
  '```python',
  'def count_vowels(text):',
  '    total = 0',
  '    for ch in text.lower():',
  "        if ch in 'aeiou':",
  '            total += 1',
  '    return total',
  '```',
  '```',
  "count_vowels('Hello World')",
  "count_vowels('')",
  "count_vowels('AEIOU xyz')",
  '```',
].join('\n');

const RULES = [
  'Rules:',
  '- Standard library only; no input(), files, network, processes, randomness, clock or environment.',
  '- The same call must always return the same value (do not depend on the order of a set of strings or on hash values).',
  '- The entry function returns a value Python can write as a literal (numbers, strings, bytes, lists, tuples, dicts, sets, booleans, None).',
  '- Keep it short (under 40 lines) and make the example calls exercise different branches.',
].join('\n');

export function synthesisPrompt(spec: Spec, constraints: Constraints): ChatMessage[] {
  const c = spec.constraints;
  const uses = c.types.map((t) => (t.type === 'builtins' ? `built-in functions ${t.methods.join(', ')}` : `${t.type} with ${t.methods.join(', ')}`));
  const lines = [
    // The spec's id makes every prompt its own (a response cache never answers two specs alike).
    `Program ${spec.id}: write a Python program (curriculum level ${spec.level} of ${constraints.levels.length}) under these constraints:`,
    `- Use: ${uses.join('; ')}.`,
    ...(c.nested ? [`- Nested calls: ${c.nested}.`] : []),
    `- Functions: ${constraints.variants[c.variant]}`,
    `- Control flow (nesting depth ${c.depth}): ${c.blueprint}.`,
    '',
    RULES,
    '',
    ANSWER_FORMAT,
  ];
  return [
    { role: 'system', content: SYNTHESIS_SYSTEM },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** A program that yielded a sample, as the second round shows it. */
export interface ProgramOf {
  code: string;
  /** The entry function (the callee of its first good call). */
  function: string;
  /** Its example calls so far. */
  calls: string[];
}

/** The custom_id / answers.jsonl id of the second-round request for answer `answer` of a spec. */
export function inputsId(spec: string, answer: number): string {
  return `${spec}.${answer}.inputs`;
}

/** Round 2: more calls of a kept program, reaching what its calls do not. */
export function inputsPrompt(spec: string, answer: number, program: ProgramOf, count: number): ChatMessage[] {
  const user = [
    `Program ${inputsId(spec, answer)}: below is a Python program and example calls of its entry function \`${program.function}\`.`,
    `Write ${count} more calls of \`${program.function}\` with literal arguments that reach branches and cases these calls do not (empty, one element, negative, zero, duplicates, unicode, long).`,
    'Answer with one fenced ``` block, one call expression per line; anything else is ignored.',
    '',
    '```python',
    program.code.replace(/\s+$/, ''),
    '```',
    '',
    'Calls so far:',
    '```',
    ...program.calls,
    '```',
  ].join('\n');
  return [
    { role: 'system', content: SYNTHESIS_SYSTEM },
    { role: 'user', content: user },
  ];
}
