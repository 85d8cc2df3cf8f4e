// The model side of the engine in one import: the endpoint client, the
// Provider interface with its model and baseline implementations, batch files,
// the response cache and accounting.
export { ModelClient, type ClientDeps, type Completion, type CompletionRequest, type OutputSchema, type Sample, type StreamEvent } from './client';
export {
  ApiModeSchema,
  ConfigError,
  EndpointConfigSchema,
  SamplingSchema,
  describeEndpoint,
  endpointFromEnv,
  parseEndpointConfig,
  redactSecrets,
  type ApiMode,
  type EndpointConfig,
  type EndpointConfigInput,
  type Sampling,
} from './config';
export { ModelError, isModelError, type ModelErrorCode } from './errors';
export { ChatMessageSchema, PromptSchema, asMessages, asText, chatPrompt, textPrompt, type ChatMessage, type Prompt } from './prompt';
export { ModelProvider, type AnswerRequest, type BaselineQuestion, type Provider, type ProviderInfo, type ProviderReply } from './provider';
export { BASELINE_LABEL, BaselineProvider, baselineQuestion, baselineText, isBaseline, type QuestionSite } from './baseline';
export { DiskCache, MemoryCache, cacheKey, type ResponseCache } from './cache';
export { batchRequestLines, parseBatchResults, readBatchResults, writeBatchFile, type BatchImport, type BatchItem, type BatchLineError } from './batch';
export { Accounting, RunStatsSchema, formatRunStats, type RunStats } from './accounting';
export { parseStructured, type StructuredResult } from './structured';
export { toJsonSchema } from './json-schema';
