// Golden transcripts: scripted debug sessions over real recordings, rendered
// to text and compared with test/adapter/golden/*.txt. A changed or missing
// transcript fails; regenerate on purpose with UPDATE_GOLDEN=1 and review the diff.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { closePool, program, REPO, startAdapter, startSession, type Adapter, type LaunchOptions } from './harness';

after(closePool);

const GOLDEN_DIR = path.join(__dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

type Command =
  | 'next'
  | 'stepIn'
  | 'stepOut'
  | 'stepBack'
  | 'continue'
  | 'reverseContinue'
  | { goto: { line: number; run: number } }
  | { evaluate: string }
  | { setBreakpoints: { line: number; condition?: string; hitCondition?: string }[] }
  | 'exceptionInfo';

interface Script {
  name: string;
  title: string;
  config: Record<string, unknown>;
  options?: LaunchOptions;
  commands: Command[];
}

const SCRIPTS: Script[] = [
  {
    name: 'calls-step-forward-and-back',
    title: 'dbg_calls.py main(): step over, into and out of calls, then back',
    config: { program: program('dbg_calls.py'), entry: 'main()' },
    commands: ['next', 'stepIn', 'next', 'next', 'stepIn', 'next', 'next', 'stepBack', 'stepBack', 'stepOut', 'continue'],
  },
  {
    name: 'recursion-step-out',
    title: 'dbg_recursion.py depth(3): break at the base case, step out level by level, reverse-continue',
    config: { program: program('dbg_recursion.py'), entry: 'depth(3)', stopOnEntry: false },
    options: { breakpoints: [{ line: 4 }] },
    commands: ['stepOut', 'stepOut', 'reverseContinue', 'continue', 'continue'],
  },
  {
    name: 'loop-goto-and-conditions',
    title: 'dbg_loop.py accumulate(5): goto the 3rd run of the loop body, evaluate, conditional breakpoint',
    config: { program: program('dbg_loop.py'), entry: 'accumulate(5)' },
    commands: [
      { goto: { line: 5, run: 3 } },
      { evaluate: 'total + i * 10' },
      { setBreakpoints: [{ line: 5, condition: 'total >= 6' }] },
      'continue',
      'reverseContinue',
      'continue',
    ],
  },
  {
    name: 'exceptions',
    title: 'dbg_raise.py run(): raised and uncaught exception stops',
    config: { program: program('dbg_raise.py'), entry: 'run()', stopOnEntry: false },
    options: { exceptionFilters: ['raised', 'uncaught'] },
    commands: ['exceptionInfo', 'continue', 'exceptionInfo', 'stepBack', 'continue', 'continue'],
  },
  {
    name: 'script-globals',
    title: 'dbg_script.py ab c: module globals, program output, structured values',
    config: { program: program('dbg_script.py'), args: ['ab', 'c'], stopOnEntry: false },
    options: { breakpoints: [{ line: 12 }] },
    commands: ['stepOut', 'continue'],
  },
];

for (const script of SCRIPTS) {
  test(`golden transcript: ${script.name}`, async () => {
    const actual = await transcript(script);
    const file = path.join(GOLDEN_DIR, `${script.name}.txt`);
    if (UPDATE) {
      fs.mkdirSync(GOLDEN_DIR, { recursive: true });
      fs.writeFileSync(file, actual);
      return;
    }
    assert.ok(
      fs.existsSync(file),
      `golden file ${path.relative(process.cwd(), file)} is missing: run UPDATE_GOLDEN=1 node --import tsx --test test/adapter/golden.test.ts and review it`,
    );
    assert.equal(
      actual,
      fs.readFileSync(file, 'utf8'),
      `transcript differs from ${file}; if the change is intended, regenerate with UPDATE_GOLDEN=1 and review the diff`,
    );
  });
}

async function transcript(script: Script): Promise<string> {
  const a = await startAdapter();
  const out: string[] = [`# ${script.title}`, ''];
  try {
    const firstStop = a.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
    const configShown = Object.entries(script.config).map(([k, v]) => `${k}=${JSON.stringify(k === 'program' ? path.basename(String(v)) : v)}`);
    out.push(`launch ${configShown.join(' ')}${script.options ? ` ${JSON.stringify(script.options)}` : ''}`);
    await startSession(a, script.config, script.options);
    await renderStop(a, await firstStop, out);
    for (const command of script.commands) {
      if (a.events.some((e) => e.event === 'terminated')) break;
      out.push('', `> ${typeof command === 'string' ? command : JSON.stringify(command)}`);
      await run(a, command, out);
    }
    out.push('', 'output:');
    for (const e of a.events) {
      if (e.event === 'output') out.push(`  [${e.body.category}] ${JSON.stringify(e.body.output)}`);
      if (e.event === 'exited') out.push(`  [exited] code=${e.body.exitCode} outcome=${JSON.stringify(e.body.outcome)}`);
      if (e.event === 'terminated') out.push('  [terminated]');
    }
  } finally {
    await a.close();
  }
  // Absolute paths (for example a script's __file__) depend on the checkout location.
  return out.join('\n').split(REPO).join('<repo>') + '\n';
}

async function run(a: Adapter, command: Command, out: string[]): Promise<void> {
  const { dc } = a;
  const args = { threadId: 1 };
  if (command === 'exceptionInfo') {
    const info = await dc.exceptionInfoRequest(args);
    out.push(`  exception ${info.body.exceptionId}: ${info.body.description} (${info.body.breakMode})`);
    return;
  }
  if (typeof command === 'object' && 'evaluate' in command) {
    const st = await dc.stackTraceRequest(args);
    const r = await dc.evaluateRequest({ expression: command.evaluate, frameId: st.body.stackFrames[0]!.id, context: 'watch' });
    out.push(`  = ${r.body.result} (${r.body.type})`);
    return;
  }
  if (typeof command === 'object' && 'setBreakpoints' in command) {
    const st = await dc.stackTraceRequest(args);
    const res = await dc.setBreakpointsRequest({ source: { path: st.body.stackFrames[0]!.source!.path! }, breakpoints: command.setBreakpoints });
    for (const b of res.body.breakpoints) out.push(`  breakpoint line ${b.line}: ${b.verified ? 'verified' : `unverified (${b.message})`}`);
    return;
  }
  const ended = dc.waitForEvent('terminated').then(() => undefined);
  const stopped = dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  if (typeof command === 'object') {
    const st = await dc.stackTraceRequest(args);
    const targets = await dc.gotoTargetsRequest({ source: st.body.stackFrames[0]!.source!, line: command.goto.line });
    for (const t of targets.body.targets) out.push(`  target ${t.label}`);
    await dc.gotoRequest({ threadId: 1, targetId: targets.body.targets[command.goto.run - 1]!.id });
  } else {
    switch (command) {
      case 'next':
        await dc.nextRequest(args);
        break;
      case 'stepIn':
        await dc.stepInRequest(args);
        break;
      case 'stepOut':
        await dc.stepOutRequest(args);
        break;
      case 'stepBack':
        await dc.stepBackRequest(args);
        break;
      case 'continue':
        await dc.continueRequest(args);
        break;
      case 'reverseContinue':
        await dc.reverseContinueRequest(args);
        break;
    }
  }
  const first = await Promise.race([stopped, ended]);
  if (first) await renderStop(a, first, out);
  else out.push('  (ended)');
}

async function renderStop(a: Adapter, stop: DebugProtocol.StoppedEvent, out: string[]): Promise<void> {
  const { dc } = a;
  const extra = [stop.body.description, stop.body.text].filter(Boolean).join(' | ');
  out.push(`  stopped: ${stop.body.reason}${extra ? ` (${extra})` : ''}`);
  const st = await dc.stackTraceRequest({ threadId: 1 });
  for (const f of st.body.stackFrames) out.push(`  #${f.id} ${f.name} ${f.source?.name}:${f.line}`);
  const top = st.body.stackFrames[0]!;
  const scopes = await dc.scopesRequest({ frameId: top.id });
  for (const scope of scopes.body.scopes) {
    out.push(`  ${scope.name}:`);
    await renderVariables(a, scope.variablesReference, '    ', 2, out);
  }
}

async function renderVariables(a: Adapter, ref: number, indent: string, depth: number, out: string[]): Promise<void> {
  const vars = await a.dc.variablesRequest({ variablesReference: ref });
  if (!vars.body.variables.length) out.push(`${indent}(none)`);
  for (const v of vars.body.variables.slice(0, 12)) {
    out.push(`${indent}${v.name}: ${v.type ?? '?'} = ${v.value}`);
    if (v.variablesReference && depth > 0) await renderVariables(a, v.variablesReference, indent + '  ', depth - 1, out);
  }
  if (vars.body.variables.length > 12) out.push(`${indent}… ${vars.body.variables.length - 12} more`);
}
