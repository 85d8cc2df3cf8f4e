// The model a CLI command asks: one reading of the endpoint flags and the
// response cache for ask, simulate and eval, so they agree on both.
import * as path from 'node:path';
import { UsageError, type CliIO } from './command';
import { DiskCache } from '../engine/model/cache';
import { ModelClient } from '../engine/model/client';
import { ConfigError, endpointFromEnv, type EndpointConfigInput } from '../engine/model/config';
import { ModelProvider } from '../engine/model/provider';

/**
 * The model the flag `overrides` over EXECVERIFY_* variables name
 * (docs/model-endpoints.md), behind the response cache (--cache-dir, default
 * .execverify/cache/model) unless --no-cache; undefined when none is
 * configured. A bad endpoint setting is a UsageError.
 */
export function modelProviderFor(io: CliIO, values: Record<string, unknown>, overrides: Partial<EndpointConfigInput>): ModelProvider | undefined {
  try {
    const endpoint = endpointFromEnv(io.env, overrides);
    if (!endpoint) return undefined;
    const cache =
      values['no-cache'] === true
        ? undefined
        : new DiskCache(path.resolve(io.cwd, typeof values['cache-dir'] === 'string' ? values['cache-dir'] : '.execverify/cache/model'));
    return new ModelProvider(new ModelClient(endpoint, cache ? { cache } : {}));
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}
