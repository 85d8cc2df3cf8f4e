// The tracer the adapter tests record with: the engine's TracerPool (one worker).
import { TracerPools } from '../../src/adapter/tracer-recorder';

export function testTracePools(): TracerPools {
  return new TracerPools({ size: 1 });
}
