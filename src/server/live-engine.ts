// The real Engine: the tracer pool, the question generator, the model client
// (or the baseline), the judge and the sample store, assembled for the server.
import { EngineError, type Engine } from './engine';

export interface LiveEngineOptions {
  log: (line: string) => void;
}

export function createLiveEngine(_options: LiveEngineOptions): Engine {
  const missing = (what: string) => () => Promise.reject(new EngineError('internal', `${what} is not available in this build yet.`));
  return {
    trace: missing('Tracing'),
    predictStep: missing('Prediction'),
    judgeStep: missing('Judging'),
    verifyCall: missing('Verification'),
    addSample: missing('The sample store'),
    exportSamples: missing('Export'),
    health: missing('Health'),
    close: async () => {},
  };
}
