import { TracerPool } from './src/engine/trace/runner';
import { parseTrace } from './src/engine/trace/validate';
import { TraceSchema } from './src/engine/trace/schema';
import { decodeTrace } from './src/engine/trace/decode';
async function main() {
  const pool = new TracerPool({ size: 1 });
  const t = await pool.trace({ source: 'def f(s):\n    out = []\n    for c in s:\n        out.append(c.upper())\n    return "".join(out)\n', entry: { kind: 'call', expr: 'f("hello world")' } });
  await pool.close();
  const raw = JSON.stringify(t);
  for (const [name, fn] of [['JSON.parse', () => JSON.parse(raw)], ['parseTrace', () => parseTrace(JSON.parse(raw))], ['TraceSchema', () => TraceSchema.parse(JSON.parse(raw))], ['decode', () => decodeTrace(t)]] as const) {
    const n = 500; const s = performance.now(); for (let i = 0; i < n; i++) fn(); console.log(name, ((performance.now() - s) / n).toFixed(3), 'ms');
  }
}
void main();
