// "ExecVerify: Open Evaluation Report" against a fake `vscode`: a real report
// (written by writeReport) in a webview whose CSP lets only the page's own
// scripts run, and replay links that start the replay debugger only on a
// trace in the report's traces/ folder.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, test } from 'node:test';
import { OPEN_REPORT_COMMAND, REPORT_VIEW_TYPE, registerReportViewer, reportTrace } from '../../src/extension/report';
import { writeReport } from '../../src/engine/report';
import { fake, makeContext, resetFake, Uri } from '../support/fake-vscode';
import { tick } from './extension-fakes';

beforeEach(() => resetFake());

/** The handler reads the file system: let it run until `done` (a bound on turns, not on time). */
async function until(done: () => boolean) {
  for (let i = 0; i < 10_000 && !done(); i++) await tick();
}

async function aReport() {
  const dir = mkdtempSync(path.join(tmpdir(), 'ev-report-view-'));
  const { html } = await writeReport(dir, {
    schema: 'execverify.report/1',
    title: 'REval: test',
    created: '2026-01-01T00:00:00.000Z',
    metrics: [{ name: 'state accuracy', value: 0.5 }],
    groups: [{ name: 'Accuracy per task', rows: [{ label: 'state', n: 2, correct: 1 }] }],
    examples: [{ id: 'DREval/0/0/state/0', group: 'state', answer: '1; int', expected: '2; int', reason: 'value_differs', trace: 'traces/DREval_0_0.json' }],
  });
  mkdirSync(path.join(dir, 'traces'), { recursive: true });
  writeFileSync(path.join(dir, 'traces', 'DREval_0_0.json'), '{}');
  writeFileSync(path.join(dir, 'secret.json'), '{}');
  return { dir, html };
}

test('the report opens in a webview with a nonce CSP on every one of its scripts', async () => {
  const { html } = await aReport();
  const logs: string[] = [];
  registerReportViewer(makeContext(), { log: (l) => logs.push(l) });
  await fake.commands.get(OPEN_REPORT_COMMAND)!(Uri.file(html));
  const panel = fake.panels.find((p) => p.viewType === REPORT_VIEW_TYPE)!;
  const page = panel.webview.html;
  const nonce = /script-src 'nonce-([^']+)'/.exec(page)?.[1];
  assert.ok(nonce, 'a CSP with a script nonce');
  assert.match(page, /default-src 'none'/);
  const scripts = page.match(/<script\b[^>]*>/gi) ?? [];
  assert.equal(scripts.length, 6);
  for (const s of scripts) assert.ok(s.includes(`nonce="${nonce}"`), s);
});

test('a replay link starts the replay debugger on its trace; a path outside traces/ is ignored', async () => {
  const { dir, html } = await aReport();
  const logs: string[] = [];
  registerReportViewer(makeContext(), { log: (l) => logs.push(l) });
  await fake.commands.get(OPEN_REPORT_COMMAND)!(Uri.file(html));
  const panel = fake.panels.find((p) => p.viewType === REPORT_VIEW_TYPE)!;
  panel.webview.send({ type: 'replay', trace: 'traces/DREval_0_0.json', line: 3 });
  await until(() => fake.debugStarts.length > 0);
  assert.equal(fake.debugStarts.length, 1);
  assert.equal(fake.debugStarts[0]!.config.type, 'execverify');
  assert.equal(fake.debugStarts[0]!.config.traceFile, path.join(dir, 'traces', 'DREval_0_0.json'));
  for (const trace of ['secret.json', '../../etc/passwd', 'traces/../secret.json', '/etc/hosts', 'traces/missing.json'])
    panel.webview.send({ type: 'replay', trace });
  panel.webview.send({ type: 'run', command: 'rm -rf /' });
  await until(() => logs.length >= 5);
  assert.equal(fake.debugStarts.length, 1);
  assert.equal(logs.filter((l) => l.includes('ignored a replay link')).length, 5);
});

test('reportTrace accepts only JSON files directly in traces/', async () => {
  const { dir } = await aReport();
  assert.equal(await reportTrace(dir, 'traces/DREval_0_0.json'), path.join(dir, 'traces', 'DREval_0_0.json'));
  assert.equal(await reportTrace(dir, 'traces/../secret.json'), undefined);
  assert.equal(await reportTrace(dir, 'traces'), undefined);
});
