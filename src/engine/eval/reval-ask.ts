// REval-format prompts, written for ExecVerify to REval's published format and
// answer conventions (not copied from its prompt files): the program inside
// [PYTHON]…[/PYTHON], the question in [QUESTION]…[/QUESTION], worked examples
// first, the answer in [ANSWER]…[/ANSWER] (generation stops at [/ANSWER]); the
// chain-of-thought form reasons in [THOUGHT]…[/THOUGHT] before the answer.
import { answerPrompt, type AnswerablePrompt } from '../ask';
import { chatPrompt } from '../model/prompt';
import type { BaselineQuestion, Provider } from '../model/provider';
import type { RevalProbe, RevalProgram, RevalTaskRow } from './reval';

export const REVAL_PROMPT_VERSION = 'reval-eval@1';
const SYSTEM = 'You are an expert Python programmer who predicts exactly how code executes.';

interface Example {
  code: string;
  invocation: string;
  question?: string;
  thought: string;
  answer: string;
}

const FN = 'def g(n, k):\n    total = n * k\n    if total > 10:\n        total = total - 10\n    else:\n        total = -total\n    return total';
const CLS =
  'class Counter:\n    def __init__(self):\n        self.seen = []\n\n    def add(self, item):\n        self.seen.append(item)\n        return len(self.seen)\n\n    def last(self):\n        return self.seen[-1]';

const EXAMPLES: Record<'coverage' | 'state' | 'path' | 'output', Example[]> = {
  coverage: [
    {
      code: FN,
      invocation: 'g(3, 5)',
      question: 'Is Line 6 (        total = -total) executed when g(3, 5) is called?',
      thought: 'total = 3 * 5 = 15, which is greater than 10, so the if branch runs and the else branch (Line 6) does not.',
      answer: 'NO',
    },
    {
      code: CLS,
      invocation: 'c = Counter()\nassertEqual(c.add("x"), 1)',
      question: 'Is Line 6 (        self.seen.append(item)) executed when the above test code is called?',
      thought: 'The test calls c.add("x"), and add always runs Line 6.',
      answer: 'YES',
    },
  ],
  state: [
    {
      code: FN,
      invocation: 'g(3, 5)',
      question:
        'Is Line 4 (        total = total - 10) executed when g(3, 5) is called? If so, what is the value and type of the variable total after Line 4 is executed? If not, answer Nil.',
      thought: 'total = 15 > 10, so Line 4 runs and total becomes 15 - 10 = 5, an int.',
      answer: '5; int',
    },
    {
      code: FN,
      invocation: 'g(1, 2)',
      question:
        'Is Line 4 (        total = total - 10) executed when g(1, 2) is called? If so, what is the value and type of the variable total after Line 4 is executed? If not, answer Nil.',
      thought: 'total = 2, not greater than 10, so Line 4 never runs.',
      answer: 'Nil',
    },
    {
      code: CLS,
      invocation: 'c = Counter()\nassertEqual(c.add("x"), 1)',
      question:
        'Is Line 6 (        self.seen.append(item)) executed when the above test code is called? If so, what is the value and type of the variable self.seen after Line 6 is executed? If not, answer Nil.',
      thought: 'self.seen starts empty; add("x") appends "x".',
      answer: "['x']; list",
    },
  ],
  path: [
    {
      code: FN,
      invocation: 'g(3, 5)',
      question:
        'If the line `        total = n * k` is executed when g(3, 5) is called, answer with the next line of code to be executed inside the function. Do NOT answer lines in the test code. If not or program terminates after this line, answer with -1.',
      thought: 'After total = 15 the condition on the next line is tested.',
      answer: 'if total > 10:',
    },
    {
      code: FN,
      invocation: 'g(3, 5)',
      question:
        'If the line `        total = -total` is executed when g(3, 5) is called, answer with the next line of code to be executed inside the function. Do NOT answer lines in the test code. If not or program terminates after this line, answer with -1.',
      thought: 'total = 15 > 10, so the else branch never runs.',
      answer: '-1',
    },
    {
      code: CLS,
      invocation: 'c = Counter()\nassertEqual(c.add("x"), 1)',
      question:
        'If the line `        self.seen.append(item)` is executed when the above test code is called, answer with the next line of code to be executed inside the function. Do NOT answer lines in the test code. If not or program terminates after this line, answer with -1.',
      thought: 'add continues with its return statement.',
      answer: 'return len(self.seen)',
    },
  ],
  output: [
    {
      code: FN,
      invocation: 'assert g(3, 5) == ??',
      thought: 'total = 15 > 10, so total = 5 and g returns 5.',
      answer: 'assert g(3, 5) == 5',
    },
    {
      code: CLS,
      invocation:
        '# Test code starts here. Only write the completed test code in your answer.\nc = Counter()\nassertEqual(c.add("x"), ??)\nassertEqual(c.last(), ??)',
      thought: 'add("x") makes self.seen ["x"] and returns 1; last() returns "x".',
      answer: 'c = Counter()\nassertEqual(c.add("x"), 1)\nassertEqual(c.last(), "x")',
    },
  ],
};

const INSTRUCTIONS: Record<'coverage' | 'state' | 'path' | 'output', string> = {
  coverage:
    'You are given Python code, how it is called, and a question about one of its lines. Consider running the code on the given input exactly as written, even if it looks wrong or unfinished, and answer with YES or NO only.',
  state:
    'You are given Python code, how it is called, and a question about a variable after one of its lines. Consider running the code on the given input exactly as written, even if it looks wrong or unfinished. Answer in the form "value; type": the value as a Python literal and the type as a Python class name. If the line runs several times, any one of its values counts; give one. Answer Nil if the line never runs.',
  path: 'You are given Python code, how it is called, and a line of it. Consider running the code on the given input exactly as written, even if it looks wrong or unfinished, and answer with the one line of code that runs next inside the code (never a line of the test code), copied as it is written. Answer -1 if the line never runs or nothing runs after it.',
  output:
    'You are given Python code and test code that calls it with ?? in place of expected values. Consider running the code exactly as written, even if it looks wrong or unfinished, and complete the test code by replacing each ?? with the value it gets. Change nothing else, and write the whole completed test code.',
};

function block(e: { code: string; invocation: string; question?: string }): string {
  return `[PYTHON]\n${e.code}\n${e.invocation}\n[/PYTHON]\n${e.question !== undefined ? `[QUESTION]\n${e.question}\n[/QUESTION]\n` : ''}`;
}

function render(task: RevalProbe['task'], cot: boolean, target: { code: string; invocation: string; question?: string }): string {
  const how = cot
    ? ' Think step by step, briefly (at most 10 steps, loops without every iteration), inside [THOUGHT] and [/THOUGHT], then give the answer inside [ANSWER] and [/ANSWER], as in the examples.'
    : ' Write nothing else: only the answer inside [ANSWER] and [/ANSWER], as in the examples.';
  const shots = EXAMPLES[task].map((e) => `${block(e)}${cot ? `[THOUGHT]\n${e.thought}\n[/THOUGHT]\n` : ''}[ANSWER]\n${e.answer}\n[/ANSWER]`);
  return `${INSTRUCTIONS[task]}${how}\n\n${shots.join('\n\n')}\n\n${block(target)}${cot ? '[THOUGHT]' : '[ANSWER]'}`;
}

/** The test class REval runs for input i, found in the test module's text: its setUp body, shown as comments the way REval shows it. */
function setupComment(p: RevalProgram, inputIdx: number): string {
  const test = p.data.test ?? '';
  const re = new RegExp(`^class (${p.data.entry_point}Test\\w*)\\s*\\(([^)]*)\\)\\s*:`, 'gm');
  const starts = [...test.matchAll(re)].filter((m) => /TestCase/.test(m[2]!));
  const m = starts[inputIdx];
  if (!m) return '';
  const next = test.slice(m.index! + m[0].length).search(/^\S/m);
  const body = next === -1 ? test.slice(m.index!) : test.slice(m.index!, m.index! + m[0].length + next);
  const setUp = /^(\s+)def setUp\(self\):\n((?:\1\s+.*\n?|\s*\n)*)/m.exec(body);
  if (!setUp) return '';
  const lines = setUp[2]!.replace(/\s+$/, '').split('\n');
  return `\n# setup code executed previously\n# ${lines.join('\n# ')}`;
}

function invocationOf(p: RevalProgram, inputIdx: number): { invocation: string; abbr: string } {
  if (p.data.test === null) {
    const args = p.data.inputs[inputIdx]!.trim();
    const call = `${p.data.entry_point}${args.endsWith(',)') ? `${args.slice(0, -2)})` : args}`;
    return { invocation: call, abbr: call };
  }
  return { invocation: `${setupComment(p, inputIdx)}\n${(p.data.inputs[inputIdx] ?? '').trimEnd()}`, abbr: 'the above test code' };
}

const numbered = (code: string) =>
  code
    .split('\n')
    .map((l, i) => `${i + 1}\t${l}`)
    .join('\n');

function baselineOf(probe: RevalProbe, lines: readonly string[]): BaselineQuestion {
  switch (probe.task) {
    case 'coverage':
      return { kind: 'coverage' };
    case 'state':
      return { kind: 'state_any', var: probe.variable ?? '', before: null };
    case 'path': {
      const n = (probe.line ?? 0) + 1;
      return { kind: 'next_line', following: n <= lines.length ? { line: n, text: lines[n - 1]!.trim() } : { line: -1, text: '' } };
    }
    case 'output':
      return { kind: 'output' };
  }
}

/** The prompt for one probe, in REval's format (direct, or chain of thought with `cot`). */
export function revalPrompt(p: RevalProgram, pair: RevalTaskRow['tasks'][number], probe: RevalProbe, cot: boolean): AnswerablePrompt {
  const lines = p.data.code.split('\n');
  const { invocation, abbr } = invocationOf(p, pair.input_idx);
  const line = probe.line ?? 0;
  const codeline = lines[line - 1] ?? '';
  let text: string;
  switch (probe.task) {
    case 'coverage':
      text = render('coverage', cot, { code: p.data.code, invocation, question: `Is Line ${line} (${codeline}) executed when ${abbr} is called?` });
      break;
    case 'state':
      text = render('state', cot, {
        code: p.data.code,
        invocation,
        question: `Is Line ${line} (${codeline}) executed when ${abbr} is called? If so, what is the value and type of the variable ${probe.variable} after Line ${line} is executed? If not, answer Nil.`,
      });
      break;
    case 'path':
      // REval numbers a function's lines for this task (a class's stay plain).
      text = render('path', cot, {
        code: p.data.test === null ? numbered(p.data.code) : p.data.code,
        invocation,
        question: `If the line \`${codeline}\` is executed when ${abbr} is called, answer with the next line of code to be executed inside the function. Do NOT answer lines in the test code. If not or program terminates after this line, answer with -1.`,
      });
      break;
    case 'output': {
      const prelude =
        p.data.test === null ? '\n' : `${setupComment(p, pair.input_idx)}\n# Test code starts here. Only write the completed test code in your answer.\n`;
      text = render('output', cot, { code: p.data.code, invocation: `${prelude}${pair.output_pred}` });
      break;
    }
  }
  return {
    template: `${REVAL_PROMPT_VERSION}:${probe.task}${cot ? ':cot' : ''}`,
    format: 'reval',
    prompt: chatPrompt([
      { role: 'system', content: SYSTEM },
      { role: 'user', content: text },
    ]),
    stop: ['[/ANSWER]'],
    structured: false,
    questions: [],
    baseline: [baselineOf(probe, lines)],
  };
}

/** One probe's prompt, with the probe it asks about. */
export interface RevalAsk {
  probe: RevalProbe;
  prompt: AnswerablePrompt;
}

export interface AskedReval {
  /** key → the model's raw text (the first sample). */
  answers: Map<string, string>;
  /** key → why the provider gave no answer (after its retries). */
  failed: Map<string, string>;
}

/**
 * Ask every prompt through the one ask road (answerPrompt: the client's
 * cache, retries, concurrency limit and accounting apply). A prompt the
 * provider fails stays unanswered and is reported; cancelling stops the run.
 */
export async function askReval(
  provider: Provider,
  asks: readonly RevalAsk[],
  options: { signal?: AbortSignal; onAnswered?: () => void; lanes?: number } = {},
): Promise<AskedReval> {
  const answers = new Map<string, string>();
  const failed = new Map<string, string>();
  // A few lanes, each taking the next prompt: enough to keep the client's own
  // concurrency limit busy without ten thousand requests (and abort listeners) pending.
  let next = 0;
  const lane = async () => {
    while (next < asks.length) {
      const { probe, prompt } = asks[next++]!;
      try {
        const answered = await answerPrompt(provider, prompt, options.signal ? { signal: options.signal } : {});
        answers.set(probe.key, answered.samples[0]?.text ?? '');
      } catch (err) {
        if (options.signal?.aborted) throw err;
        failed.set(probe.key, err instanceof Error ? err.message : String(err));
      }
      options.onAnswered?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.lanes ?? 32, asks.length) }, lane));
  return { answers, failed };
}
