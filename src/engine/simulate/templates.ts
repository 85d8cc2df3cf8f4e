// The prompts of self-simulation: "what does this candidate return / print on
// this public test", one question a prompt, in the CRUXEval output shape (the
// answer is the completed assertion inside [ANSWER] tags), so the one parser
// and the one judge read the replies. Built-in data like the templates in
// engine/model/templates, validated by the same schema.
import { TemplateSchema, type Template } from '../model/templates';

const ANSWER_RULES =
  'Give the full assertion inside [ANSWER] and [/ANSWER] tags, for example:\n[ANSWER]\nassert f(17) == 17\n[/ANSWER]\n' +
  'Do not output anything else after the closing tag.';

export const FUNCTION_TEMPLATE: Template = TemplateSchema.parse({
  name: 'simulate-function',
  version: 1,
  format: 'cruxeval_output',
  api: 'chat',
  perPrompt: 'one',
  kinds: ['output'],
  description: 'Self-simulation: the value a candidate function returns on a public test (CRUXEval output shape, chat).',
  user:
    'You are given a Python function and an assertion containing an input to the function. Simulate the execution of the code ' +
    'step by step and complete the assertion with a literal (no unsimplified expressions, no function calls) containing the ' +
    'output when executing the provided code on the given input, even if the function is incorrect or incomplete. ' +
    ANSWER_RULES +
    '\n\n[PYTHON]\n{{code}}\n[/PYTHON]\n{{questions}}',
  question: { output: '[QUESTION]\nassert {{call}} == ??\n[/QUESTION]' },
});

export const SCRIPT_TEMPLATE: Template = TemplateSchema.parse({
  name: 'simulate-script',
  version: 1,
  format: 'cruxeval_output',
  api: 'chat',
  perPrompt: 'one',
  kinds: ['output'],
  description: 'Self-simulation: the text a candidate script prints for a public test input (CRUXEval output shape, chat).',
  user:
    'You are given a Python program that reads standard input and writes standard output. `output(stdin)` stands for ' +
    'everything the program prints when it runs with that text as its standard input. Simulate the execution step by step ' +
    'and complete the assertion with a Python string literal holding exactly what the program prints, even if the program ' +
    'is incorrect (if it stops with an error, what it printed before). ' +
    ANSWER_RULES +
    '\n\n[PYTHON]\n{{code}}\n[/PYTHON]\n{{questions}}',
  question: { output: '[QUESTION]\nassert {{call}} == ??\n[/QUESTION]' },
});

/** How a script test reads in its assertion: `output("3\n1 2 3\n")` (JSON's string literal is a Python one). */
export function scriptCall(stdin: string): string {
  return `output(${JSON.stringify(stdin)})`;
}
