// White-box questions from a Trace: generation, the interactive next-step set,
// and conversion to the judge's ground truth.
export { QuestionSchema, QuestionSetSchema, type Question, type QuestionKind, type WhiteBoxQuestion } from './schema';
export { generateQuestions, entryFrame, entryFunction, functionLines, calleeOf, type QuestionOptions } from './generate';
export { nextStepQuestions, type NextStepOptions } from './next-step';
export { toGroundTruth, referenceAnswer, referenceLine } from './truth';
export { seededRng, seedFrom, type Rng } from './rng';
export { confirmIn, movedQuestions } from './confirm';
export { triviality, isTrivialRun, TRIVIAL_MAX_LINES, type Triviality } from './teach';
