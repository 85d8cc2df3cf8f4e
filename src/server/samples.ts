// Turns a run the user accepted (and its whole-call verification, when there
// was one) into a sample in the canonical record format (SEMANTICS §6) for the
// workspace's sample store.
import path from 'node:path';
import type { SampleInput } from '../engine/dataset/record';
import { buildSample } from '../engine/dataset/sample';
import { structuralDifficulty } from '../engine/harvest/difficulty';
import { groundTruthString } from '../engine/judge/schema';
import { asMessages } from '../engine/model/prompt';
import { referenceAnswer, toGroundTruth } from '../engine/questions';
import { callPrompt } from './asking';
import { EngineError, type SampleRequest, type VerificationSample } from './engine-port';
import { findFunctions } from '../engine/python-functions';
import { calledFunction } from './runs';

export function editorSample(input: SampleRequest): SampleInput {
  const { trace, settings } = input;
  const outcome = trace.outcome;
  if (outcome.kind !== 'returned') {
    throw new EngineError(
      'bad_params',
      `Only runs that return can become samples (this one ${outcome.kind === 'raised' ? `raised ${outcome.type}` : `ended by ${outcome.kind}`}).`,
    );
  }
  const code = trace.files[0]?.source ?? '';
  // A credential in the code or the recorded values never enters a dataset: the store refuses the record.
  const fn = calledFunction(input.entry) ?? '';
  const verified: VerificationSample | undefined = input.verification?.sample;
  const asked = verified ?? unanswered(trace, settings);
  const reward = { alpha: settings.alpha, gating: settings.gating };
  const root = input.root;
  const rel = root && input.file.startsWith(root) ? path.relative(root, input.file) : path.basename(input.file);
  return buildSample({
    provenance: {
      project: root ? path.basename(root) : 'workspace',
      repository: null,
      commit: null,
      file: rel.split(path.sep).join('/'),
      function: fn,
      line: findFunctions(code).find((f) => f.topLevel && f.name === fn)?.line ?? null,
      license: null,
      test: null,
    },
    code,
    entry: input.entry,
    result: { repr: outcome.value.repr, type: outcome.value.type },
    trace,
    questions: asked.questions,
    groundTruth: groundTruthString(toGroundTruth(asked.questions, asked.format, { reward })),
    prompt: asked.messages,
    reference: referenceAnswer(asked.questions, asked.format),
    answers: verified
      ? [
          {
            model: verified.answerer,
            text: verified.answerText,
            reward: verified.reward.reward,
            rIo: verified.reward.r_io,
            rWhite: verified.reward.r_white,
            breakdown: verified.reward.breakdown,
          },
        ]
      : [],
    difficulty: structuralDifficulty(trace),
  });
}

/** Questions and prompt for a run saved without a verification (no model answers). */
function unanswered(trace: SampleRequest['trace'], settings: SampleRequest['settings']): Pick<VerificationSample, 'questions' | 'format' | 'messages'> {
  const p = callPrompt(trace, settings, 'sample');
  return { questions: p.questions, format: p.format, messages: asMessages(p.prompt) };
}
