// From questions to what travels with a record: the ground truth JSON the
// judge and trainers read (execverify.truth/1), and the ideal answer text in
// a prompt format (the SFT target).
import { GroundTruthSchema, TRUTH_SCHEMA_VERSION, type GroundTruth, type JudgeOptions, type RewardOptions } from '../judge/schema';
import type { AnswerFormat } from '../model/answers';
import type { Question } from './schema';

/** Questions in prompt order → the ground truth for the judge (validated). */
export function toGroundTruth(
  questions: readonly Question[],
  format: AnswerFormat,
  settings: { judge?: JudgeOptions; reward?: RewardOptions } = {},
): GroundTruth {
  const judge: JudgeOptions = { ...settings.judge };
  // Next-line answers: text in the ExecVerify prompt, line numbers in the JSON one.
  if (format === 'next_step_json' && judge.next_line_match === undefined) judge.next_line_match = 'number';
  const truth = {
    schema: TRUTH_SCHEMA_VERSION,
    format,
    questions: questions.map((q) => {
      const base = { id: q.id, kind: q.kind, truth: q.truth };
      return q.kind === 'state' || q.kind === 'state_any' ? { ...base, var: q.var } : base;
    }),
    ...(Object.keys(judge).length ? { judge } : {}),
    ...(settings.reward ? { reward: settings.reward } : {}),
  };
  return GroundTruthSchema.parse(truth);
}

/** The answer a perfect model gives for one question, in the ExecVerify / REval line format. */
export function referenceLine(q: Question): string {
  switch (q.kind) {
    case 'output':
      // A script's printed text is answered as a Python string literal (JSON's is one).
      return 'value' in q.truth ? q.truth.value.repr : q.truth.scorer === 'stdout' ? JSON.stringify(q.truth.expected) : q.truth.expected;
    case 'input':
      return q.call;
    case 'next_line':
      return q.truth.line === -1 ? '-1' : q.truth.text;
    case 'state':
      return 'nil' in q.truth ? 'Nil' : `${q.truth.repr}; ${q.truth.type.replace(/^builtins\./, '')}`;
    case 'state_any': {
      const v = q.truth.values[0];
      return v ? `${v.repr}; ${v.type}` : 'Nil';
    }
    case 'coverage':
      return q.truth.covered ? 'YES' : 'NO';
  }
}

/** The ideal response text for a whole prompt (what SFT records train on). */
export function referenceAnswer(questions: readonly Question[], format: AnswerFormat): string {
  switch (format) {
    case 'execverify': {
      const lines = questions.map((q) => (q.kind === 'output' ? `assert ${q.call} == ${referenceLine(q)}` : referenceLine(q)));
      return `<answer>\n${lines.join('\n')}\n</answer>`;
    }
    case 'reval':
      return `[ANSWER]\n${questions.map(referenceLine).join('\n')}\n[/ANSWER]`;
    case 'cruxeval_output': {
      const q = questions[0];
      return q ? `[ANSWER]\nassert ${q.kind === 'output' ? q.call : 'f(??)'} == ${referenceLine(q)}\n[/ANSWER]` : '';
    }
    case 'cruxeval_input': {
      const q = questions[0];
      return q && q.kind === 'input' ? `[ANSWER]\nassert ${q.call} == ${q.outputRepr}\n[/ANSWER]` : '';
    }
    case 'next_step_json': {
      const next = questions.find((q) => q.kind === 'next_line');
      const variables = questions.flatMap((q) =>
        q.kind === 'state' ? [{ name: q.var, value: 'nil' in q.truth ? 'Nil' : q.truth.repr, type: 'nil' in q.truth ? 'Nil' : q.truth.type }] : [],
      );
      return JSON.stringify({ next_line: next && next.kind === 'next_line' ? next.truth.line : -1, variables });
    }
  }
}
