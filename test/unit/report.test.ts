// The evaluation report (src/engine/report): report.json / .md / .html written
// whole, the page self-contained (no script, style or image from anywhere
// else), every text from a model escaped, and the charts drawn offline by
// headless Chromium (Debian's chromium, which .ci/run installs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { ReportSchema, renderMarkdown, writeReport, type ReportInput } from '../../src/engine/report';

const HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror=alert(1)>';

function sample(): ReportInput {
  return {
    schema: 'execverify.report/1',
    title: 'REval: test <model>',
    subtitle: "REval's rules",
    created: '2026-01-01T00:00:00.000Z',
    metrics: [
      { name: 'state accuracy', value: 0.5, n: 4 },
      { name: 'consistency', value: 37.5, unit: 'percent' },
      { name: 'probes', value: 12, unit: 'count' },
    ],
    groups: [
      {
        name: 'Accuracy per task',
        rows: [
          { label: 'coverage', n: 4, correct: 3 },
          { label: 'state', n: 4, correct: 2 },
        ],
      },
      { name: 'By run length', rows: [{ label: '0–5 states', n: 2, correct: 1 }] },
    ],
    confusion: {
      title: 'Next-line mistakes',
      predicted: 'answered',
      actual: 'real',
      cells: [{ predicted: 'the line below', actual: 'back (loop, call)', count: 3 }],
    },
    examples: [
      { id: 'DREval/0/0/state/1', group: 'state', answer: HOSTILE, expected: '1; int', reason: 'value_differs', trace: 'traces/DREval_0_0.json', line: 17 },
    ],
  };
}

test('writeReport writes report.json (valid), report.md and a self-contained report.html', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-report-'));
  const written = await writeReport(dir, sample(), { traces: new Map() });
  assert.deepEqual(readdirSync(dir).sort(), ['report.html', 'report.json', 'report.md']);
  const json = ReportSchema.parse(JSON.parse(readFileSync(written.json, 'utf8')));
  assert.equal(json.metrics[0]!.unit, 'ratio'); // the default, filled in
  const md = readFileSync(written.markdown, 'utf8');
  assert.match(md, /\| state accuracy \| 50\.00% \| 4 \|/);
  assert.match(md, /\| consistency \| 37\.50 \| {2}\|/);
  assert.match(md, /\| coverage \| 4 \| 3 \| 75\.00% \|/);
  assert.match(md, /\[replay\]\(traces\/DREval_0_0\.json\)/);
  const html = readFileSync(written.html, 'utf8');
  // Nothing is fetched: no external script; outside the scripts, no style sheet, image or frame.
  assert.doesNotMatch(html, /<script[^>]*\ssrc=/i);
  const markup = html.replace(/<script\b[^>]*>[\s\S]*?<\/script>/gi, '');
  assert.doesNotMatch(markup, /<(link|img|iframe|object|embed)\b/i);
  // Our scripts only: the data blocks, vega, vega-lite, vega-embed, the page's own.
  assert.equal((html.match(/<script\b/gi) ?? []).length, 6);
  assert.ok(html.includes('&lt;/script&gt;&lt;script&gt;window.pwned'), 'the hostile answer is shown as text');
  assert.ok(!html.includes(HOSTILE));
});

test('an invalid report is refused before anything is written', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'ev-report-bad-')), 'out');
  const bad = { ...sample(), groups: [{ name: 'x', rows: [{ label: 'a', n: -1, correct: 0 }] }] };
  await assert.rejects(writeReport(dir, bad));
  assert.throws(() => readdirSync(dir));
});

test('markdown escapes table cells (a | in an answer stays in its cell)', () => {
  const r = ReportSchema.parse({ ...sample(), examples: [{ ...sample().examples[0]!, answer: 'a | b\nc' }] });
  assert.match(renderMarkdown(r), /\| a \\\| b c \|/);
});

test('headless Chromium draws every chart offline, and the hostile answer runs no script', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ev-report-chromium-'));
  const { html } = await writeReport(dir, sample());
  const { stdout } = await promisify(execFile)(
    'chromium',
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--virtual-time-budget=10000', '--dump-dom', pathToFileURL(html).href],
    { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  // Two bar groups and the confusion map: three SVG charts, no chart error.
  assert.equal((stdout.match(/<svg[^>]*class="marks"/g) ?? []).length, 3);
  assert.doesNotMatch(stdout, />chart: /); // the text a chart that fails to draw shows instead
  assert.ok(stdout.includes('&lt;/script&gt;&lt;script&gt;window.pwned'), 'the hostile answer stays text in the page');
  assert.match(stdout, /the line below/);
});
