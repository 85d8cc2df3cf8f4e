// Hand-made canonical records for dataset and exporter tests: small but
// complete, with ground truth in the judge's format (execverify.truth/1).
import { makeRecord, type SampleInput, type SampleRecord } from '../../src/engine/dataset/record';

export function sampleInput(n: number, overrides: Partial<SampleInput> = {}): SampleInput {
  const fn = `f${n % 7}`;
  const code = `def ${fn}(x):\n    y = x + ${n}\n    return y\n`;
  const entry = `${fn}(${n})`;
  const result = String(2 * n);
  const truth = {
    schema: 'execverify.truth/1',
    format: 'execverify',
    questions: [
      { id: 'output', kind: 'output', truth: { value: { repr: result, type: 'int', literal: true } } },
      { id: 'state:2:1:y', kind: 'state', var: 'y', truth: { repr: result, type: 'int', literal: true } },
    ],
  };
  return {
    provenance: {
      project: 'demo',
      repository: null,
      commit: null,
      file: `pkg/mod${n % 3}.py`,
      function: fn,
      line: 1,
      license: 'MIT',
      test: `tests.test_mod.T.test_${n}`,
    },
    code,
    entry,
    result: { repr: result, type: 'int' },
    trace: { digest: `d${n}`, steps: 4, python: '3.11.7' },
    questions: [
      { id: 'output', kind: 'output', call: entry },
      { id: 'state:2:1:y', kind: 'state', var: 'y' },
    ],
    groundTruth: JSON.stringify(truth),
    prompt: [
      { role: 'system', content: 'You simulate Python execution.' },
      { role: 'user', content: `${code}\nQuestion1: Fill the assertion statement.\nassert ${entry} == ??\nQuestion2: value and type of y after line 2` },
    ],
    reference: `<answer>\nassert ${entry} == ${result}\n${result}; int\n</answer>`,
    frames: [
      { line: 2, source: `    y = x + ${n}`, event: 'line', fn, locals: { x: String(n) } },
      { line: 3, source: '    return y', event: 'line', fn, locals: { x: String(n), y: result } },
    ],
    ...overrides,
  };
}

export function sampleRecord(n: number, overrides: Partial<SampleInput> = {}): SampleRecord {
  return makeRecord(sampleInput(n, overrides));
}
