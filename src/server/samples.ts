// Turns a run the user accepted (and its whole-call verification, when there
// was one) into a sample in the canonical record format (SEMANTICS §6) for the
// workspace's sample store.
import path from 'node:path';
import { sha256, stableJson, type SampleInput } from '../engine/dataset/record';
import { scanCredentials } from '../engine/harvest/credentials';
import { structuralDifficulty } from '../engine/harvest/difficulty';
import { traceFrames } from '../engine/harvest/pipeline';
import { groundTruthString } from '../engine/judge/schema';
import { asMessages } from '../engine/model/prompt';
import { referenceAnswer, toGroundTruth } from '../engine/questions';
import { callPrompt } from './asking';
import { EngineError, type SampleInput as EditorSample, type VerificationSample } from './engine-port';
import { findFunctions } from './functions';
import { calledFunction } from './runs';

export function buildSample(input: EditorSample): SampleInput {
  const { trace, settings } = input;
  const outcome = trace.outcome;
  if (outcome.kind !== 'returned') {
    throw new EngineError('bad_params', `Only runs that return can become samples (this one ${outcome.kind === 'raised' ? `raised ${outcome.type}` : `ended by ${outcome.kind}`}).`);
  }
  const code = trace.files[0]?.source ?? '';
  // A credential in the code or the recorded values never enters a dataset.
  const values = trace.steps.flatMap((st) => Object.values(st.set ?? {}).map((v) => v.repr));
  const found = scanCredentials([code, input.entry, outcome.value.repr, ...values].join('\n'));
  if (found.length > 0) {
    throw new EngineError('bad_params', `Not added: the code or its values hold what looks like a credential (${[...new Set(found.map((f) => f.kind))].join(', ')}). Remove it and trace again.`);
  }
  const fn = calledFunction(input.entry) ?? '';
  const verified: VerificationSample | undefined = input.verification?.sample;
  const asked = verified ?? unanswered(trace, settings);
  const reward = { alpha: settings.alpha, gating: settings.gating };
  const root = input.root;
  const rel = root && input.file.startsWith(root) ? path.relative(root, input.file) : path.basename(input.file);
  return {
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
    trace: { digest: sha256(stableJson(trace)), steps: trace.steps.length, python: trace.python.version },
    questions: asked.questions,
    groundTruth: groundTruthString(toGroundTruth(asked.questions, asked.format, { reward })),
    prompt: asked.messages,
    reference: referenceAnswer(asked.questions, asked.format),
    answers: verified
      ? [{ model: verified.answerer, text: verified.answerText, reward: verified.reward.reward, rIo: verified.reward.r_io, rWhite: verified.reward.r_white, breakdown: verified.reward.breakdown }]
      : [],
    difficulty: structuralDifficulty(trace),
    frames: traceFrames(trace, 200),
  };
}

/** Questions and prompt for a run saved without a verification (no model answers). */
function unanswered(trace: EditorSample['trace'], settings: EditorSample['settings']): Pick<VerificationSample, 'questions' | 'format' | 'messages'> {
  const p = callPrompt(trace, settings, 'sample');
  return { questions: p.questions, format: p.format, messages: asMessages(p.prompt) };
}
