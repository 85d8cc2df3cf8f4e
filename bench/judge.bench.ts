// Judge throughput of ONE worker, through the real JSON-lines protocol:
//   state answers/s      (target ≥ 20,000)  — literal parsing, type normalisation, Python ==
//   sandboxed answers/s  (target ≥ 500)     — output answers that are expressions, evaluated in the sandbox
//                                            (and, in the same run, the same on a worker without its fork server)
// Run: npm run bench:judge  (not part of the test suite; prints numbers).
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { TracerPool } from '../src/engine/trace/runner';
import { JudgeClient, type JudgeItem } from '../src/engine/judge/client';

const STATE_ANSWERS = 100_000;
const EXPR_ANSWERS = 4_000;
const BATCH = 5_000;
const OFFICIAL_ANSWERS = 20_000;

function stateItems(n: number): JudgeItem[] {
  // A realistic mix: ints, strings, lists, dicts, floats, None, Nil, wrong types.
  const shapes: [string, { repr: string; type: string; literal: boolean }][] = [
    ['3; int', { repr: '3', type: 'int', literal: true }],
    ["'abc'; str", { repr: "'abc'", type: 'str', literal: true }],
    ['[1, 2, 3]; List[int]', { repr: '[1, 2, 3]', type: 'list', literal: true }],
    ["{'a': 1, 'b': [2]}; dict", { repr: "{'a': 1, 'b': [2]}", type: 'dict', literal: true }],
    ['0.30000001; float', { repr: '0.3', type: 'float', literal: true }],
    ['None; NoneType', { repr: 'None', type: 'NoneType', literal: true }],
    ['4; str', { repr: '4', type: 'int', literal: true }],
    ['(1, 2); tuple', { repr: '(1, 2)', type: 'tuple', literal: true }],
  ];
  return Array.from({ length: n }, (_, i) => {
    const [answer, truth] = shapes[i % shapes.length]!;
    return { kind: 'state' as const, answer, truth };
  });
}

// CRUXEval's own programs and reference outputs, judged by the official rule
// (`assert expected == answer` after the code): a literal answer to a program
// that only defines functions needs no process (expr_eval: what the child would
// say, said by the judge); `[answer][0]`, the same value but no literal, goes
// to a child as any expression does.
const CRUX = join(__dirname, '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');

function officialItems(n: number, wrap: boolean): JudgeItem[] {
  const rows = readFileSync(CRUX, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { code: string; input: string; output: string });
  return Array.from({ length: n }, (_, i) => {
    const r = rows[i % rows.length]!;
    return {
      kind: 'output' as const,
      answer: wrap ? `[${r.output}][0]` : r.output,
      truth: { scorer: 'cruxeval', code: r.code, input: r.input, expected: r.output },
    };
  });
}

function exprItems(n: number): JudgeItem[] {
  const shapes: [string, { repr: string; type: string; literal: boolean }][] = [
    ['sorted([3, 1, 2])', { repr: '[1, 2, 3]', type: 'list', literal: true }],
    ["'ab' * 2", { repr: "'abab'", type: 'str', literal: true }],
    ['sum(range(10))', { repr: '45', type: 'int', literal: true }],
    ['dict(a=1)', { repr: "{'a': 1}", type: 'dict', literal: true }],
  ];
  return Array.from({ length: n }, (_, i) => {
    const [answer, value] = shapes[i % shapes.length]!;
    return { kind: 'output' as const, answer, truth: { value } };
  });
}

/** CPU seconds the worker process has used so far (Linux /proc; undefined elsewhere). */
function workerCpuS(pid: number): number | undefined {
  try {
    // ping's pid is the worker's inside its sandbox (a PID namespace of its
    // own): here it may name another process, whose CPU would be no measure
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('execverify.worker')) return undefined;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

/**
 * Wall-clock rate through the protocol, and rates per CPU second of the worker
 * — of the judging alone (cpu_ms) and of the whole process including JSON
 * decoding and encoding — which a busy shared machine does not distort.
 */
async function rate(
  pool: TracerPool,
  pid: number,
  items: JudgeItem[],
): Promise<{ perSecond: number; perCpuSecond: number; perProcessCpuSecond: number | undefined; correct: number }> {
  const cpu0 = workerCpuS(pid);
  const t0 = performance.now();
  let correct = 0;
  let cpuMs = 0;
  for (let i = 0; i < items.length; i += BATCH) {
    const batch = items.slice(i, i + BATCH);
    const r = (await pool.request('judge_batch', { items: batch }, undefined, 600_000)) as { verdicts: { correct: boolean }[]; cpu_ms: number };
    if (r.verdicts.length !== batch.length) throw new Error('verdict count differs');
    correct += r.verdicts.filter((v) => v.correct).length;
    cpuMs += r.cpu_ms;
  }
  const cpu1 = workerCpuS(pid);
  const processCpu = cpu0 !== undefined && cpu1 !== undefined && cpu1 > cpu0 ? items.length / (cpu1 - cpu0) : undefined;
  return { perSecond: items.length / ((performance.now() - t0) / 1000), perCpuSecond: items.length / (cpuMs / 1000), perProcessCpuSecond: processCpu, correct };
}

async function main() {
  const pool = new TracerPool({ size: 1 });
  const judge = new JudgeClient(pool);
  try {
    const { pid } = (await pool.request('ping')) as { pid: number };
    await rate(pool, pid, stateItems(2_000)); // warm the worker
    const state = await rate(pool, pid, stateItems(STATE_ANSWERS));
    const expr = await rate(pool, pid, exprItems(EXPR_ANSWERS));
    // The same answers on a worker without its fork server
    // (EXECVERIFY_PREFORK=off: each answer through the answer host, a courier
    // and a fork of it), in the same run; then ours once more.
    const old = new TracerPool({ size: 1, env: { ...process.env, EXECVERIFY_PREFORK: 'off' } });
    let forked;
    try {
      const { pid: oldPid } = (await old.request('ping')) as { pid: number };
      await rate(old, oldPid, exprItems(200));
      forked = await rate(old, oldPid, exprItems(EXPR_ANSWERS));
    } finally {
      await old.close();
    }
    const again = await rate(pool, pid, exprItems(EXPR_ANSWERS));
    const literal = await rate(pool, pid, officialItems(OFFICIAL_ANSWERS, false));
    const wrapped = await rate(pool, pid, officialItems(EXPR_ANSWERS, true));
    const single = performance.now();
    for (let i = 0; i < 50; i++) await judge.judge(exprItems(1)[0]!);
    const singleRate = 50 / ((performance.now() - single) / 1000);
    const line = (name: string, r: number, target: number) =>
      `${name.padEnd(40)} ${Math.round(r).toLocaleString('en-US').padStart(9)}/s   target ≥ ${target.toLocaleString('en-US')}  ${r >= target ? 'OK' : 'BELOW TARGET'}`;
    console.log(
      `judge throughput, one worker (JSON-lines protocol included); load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${os.availableParallelism()} cores`,
    );
    console.log(line(`state answers (${STATE_ANSWERS.toLocaleString('en-US')})`, state.perSecond, 20_000));
    console.log(`${'  per CPU second of the worker: judging'.padEnd(40)} ${Math.round(state.perCpuSecond).toLocaleString('en-US').padStart(9)}/s`);
    if (state.perProcessCpuSecond !== undefined) {
      console.log(`${'  ... whole worker incl. JSON protocol'.padEnd(40)} ${Math.round(state.perProcessCpuSecond).toLocaleString('en-US').padStart(9)}/s`);
    }
    console.log(line(`sandboxed expression answers (${EXPR_ANSWERS})`, expr.perSecond, 500));
    console.log(`${'  the same, measured again after (b)'.padEnd(40)} ${Math.round(again.perSecond).toLocaleString('en-US').padStart(9)}/s`);
    console.log(
      `${'  (b) answer host, fork per answer'.padEnd(40)} ${Math.round(forked.perSecond).toLocaleString('en-US').padStart(9)}/s   (EXECVERIFY_PREFORK=off, the design before the fork server)`,
    );
    console.log(`${'  (one expression per request, 1 fork each)'.padEnd(40)} ${Math.round(singleRate).toLocaleString('en-US').padStart(9)}/s`);
    console.log(
      `${`CRUXEval official, literal answers (${OFFICIAL_ANSWERS.toLocaleString('en-US')})`.padEnd(40)} ${Math.round(literal.perSecond).toLocaleString('en-US').padStart(9)}/s   (no process: a literal against a program of defs)`,
    );
    console.log(
      `${`  the same as [answer][0] (${EXPR_ANSWERS})`.padEnd(40)} ${Math.round(wrapped.perSecond).toLocaleString('en-US').padStart(9)}/s   (each in its own sandboxed child)`,
    );
    console.log(
      `correct: state ${state.correct}/${STATE_ANSWERS}, expressions ${expr.correct}/${EXPR_ANSWERS}, official literals ${literal.correct}/${OFFICIAL_ANSWERS}, wrapped ${wrapped.correct}/${EXPR_ANSWERS}`,
    );
  } finally {
    await pool.close();
  }
}

void main();
