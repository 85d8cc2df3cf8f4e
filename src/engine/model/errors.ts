// The one error type of the model client: a code to branch on, whether a retry
// can help, and a message that says what to do next.
export type ModelErrorCode =
  'timeout' | 'rate_limited' | 'server_error' | 'connection' | 'bad_response' | 'too_large' | 'bad_request' | 'auth' | 'not_found' | 'aborted';

const RETRYABLE: ReadonlySet<ModelErrorCode> = new Set(['timeout', 'rate_limited', 'server_error', 'connection', 'bad_response']);

export class ModelError extends Error {
  override name = 'ModelError';
  readonly retryable: boolean;
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly details: { status?: number; retryAfterMs?: number; attempts?: number } = {},
  ) {
    super(message);
    this.retryable = RETRYABLE.has(code);
  }
}

export function isModelError(err: unknown): err is ModelError {
  return err instanceof ModelError;
}
