// The model in the end-to-end scenario: the project's OpenAI-compatible test
// server, scripted to be right on the first "Predict next step" and wrong on
// the second, and to get only the output right on "Verify whole call".
//
// The fixture is running_max([3, 1, 4]) in fixtures/workspace/stats.py:
//   5    best = xs[0]          first stop; next line 6, best = 3 after it
//   6    for x in xs[1:]:      second stop; next line 7, x = 1 after it
//   7        if x > best:
// These answers come from reading the Python code, not from the extension.
import type { RecordedRequest, Reply, Script } from '../support/openai-server.ts';

export const FIXTURE_ENTRY = 'running_max([3, 1, 4])';

/** Right: after line 5 runs, line 6 is next, best == 3, xs unchanged (the question set includes unchanged variables). */
export const RIGHT_STEP = {
  next_line: 6,
  variables: [
    { name: 'best', value: '3', type: 'int' },
    { name: 'xs', value: '[3, 1, 4]', type: 'list' },
  ],
};
/** Wrong: after line 6 runs, the model claims the loop is skipped (line 9) with x == 4; really line 7, x == 1 (best and xs right). */
export const WRONG_STEP = {
  next_line: 9,
  variables: [
    { name: 'x', value: '4', type: 'int' },
    { name: 'best', value: '3', type: 'int' },
    { name: 'xs', value: '[3, 1, 4]', type: 'list' },
  ],
};

function promptOf(req: RecordedRequest): string {
  const body = req.body ?? {};
  if (typeof body.prompt === 'string') return body.prompt;
  const messages = Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : [];
  return messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

/** True for the ExecVerify mixed prompt ("Verify whole call"), false for a next-step question. */
export function isWholeCall(req: RecordedRequest): boolean {
  const prompt = promptOf(req);
  return /<answer>/i.test(prompt) || /Question\s*1\s*:/i.test(prompt);
}

/** A fresh script: next-step answers in order (right, then wrong, then wrong again), whole-call answers with only the output. */
export function scenarioScript(): Script & { nextStepRequests: () => number; wholeCallRequests: () => number } {
  const steps = [RIGHT_STEP, WRONG_STEP];
  let nextStep = 0;
  let wholeCall = 0;
  const script = ((req: RecordedRequest): Reply => {
    if (isWholeCall(req)) {
      wholeCall++;
      return { text: `<answer>\nassert ${FIXTURE_ENTRY} == 4\n</answer>` };
    }
    const answer = steps[Math.min(nextStep, steps.length - 1)]!;
    nextStep++;
    return { text: JSON.stringify(answer) };
  }) as Script & { nextStepRequests: () => number; wholeCallRequests: () => number };
  script.nextStepRequests = () => nextStep;
  script.wholeCallRequests = () => wholeCall;
  return script;
}
