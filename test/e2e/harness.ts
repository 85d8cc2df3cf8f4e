// Starts a real VS Code (code-server) and Debian's chromium for the end-to-end
// suite, and offers the few UI moves a person makes (command palette, quick
// open, screenshots). Retries only around start-up; never around assertions.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser, type Page } from 'playwright-core';

/** The suite runs from the repository root (run.sh cds there). */
export const repoRoot = process.env.E2E_REPO ?? process.cwd();

/** Where run.sh put things; each can be overridden for a hand run. */
export const env = {
  codeServer: process.env.E2E_CODE_SERVER ?? join(repoRoot, '.e2e/code-server/node_modules/code-server/out/node/entry.js'),
  extensionsDir: process.env.E2E_EXTENSIONS_DIR ?? join(repoRoot, '.e2e/extensions'),
  artifacts: process.env.E2E_ARTIFACTS ?? join(repoRoot, 'artifacts/e2e'),
  root: process.env.E2E_ROOT ?? mkdtempSync('/tmp/execverify-e2e-'),
  pidsFile: process.env.E2E_PIDS_FILE,
  chromium: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
  python: process.env.E2E_PYTHON ?? 'python3',
};

export function requireSetup(): void {
  const missing = [
    [env.codeServer, 'code-server (run test/e2e/setup.sh)'],
    [env.chromium, 'chromium (apt-get install chromium)'],
    [env.extensionsDir, 'the installed extension (run test/e2e/run.sh, which packages and installs it)'],
  ].filter(([p]) => !existsSync(p!));
  if (missing.length > 0) throw new Error(`e2e set-up incomplete, missing: ${missing.map(([, why]) => why).join('; ')}`);
}

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

/** Retries a start-up step (never an assertion): a slow shared machine may miss one deadline. */
export async function startupRetry<T>(what: string, attempts: number, fn: (attempt: number) => Promise<T>): Promise<T> {
  let last: unknown;
  for (let i = 1; i <= attempts; i++) {
    try {
      return await fn(i);
    } catch (err) {
      last = err;
      console.error(`# start-up: ${what} failed (attempt ${i}/${attempts}): ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`${what} failed ${attempts} times: ${(last as Error)?.message}`);
}

const children = new Set<ChildProcess>();
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}
process.on('exit', () => children.forEach(killGroup));
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    children.forEach(killGroup);
    process.exit(130);
  });
}

/** Spawns a process in its own group (so close() ends it and its children) and records its pid for run.sh's trap. */
export function spawnTracked(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; log: string; cwd?: string }): ChildProcess {
  const out = createWriteStream(opts.log, { flags: 'a' });
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (env.pidsFile && child.pid !== undefined) appendFileSync(env.pidsFile, `${child.pid}\n`);
  return child;
}

export async function stopTracked(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  killGroup(child);
  const timer = setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, 5000);
  await exited;
  clearTimeout(timer);
}

export interface CodeServer {
  url: string;
  name: string;
  dir: string;
  log: string;
  close(): Promise<void>;
}

export interface CodeServerOptions {
  /** Short name for its directories and logs. */
  name: string;
  /** false: leave workspace trust on and never prompt, so the folder opens in Restricted Mode. */
  trusted: boolean;
  /** Extra environment for the server and so for the extension host (e.g. EXECVERIFY_SELFTEST_OUT). */
  env?: Record<string, string>;
  /** User settings (merged over quiet defaults). */
  settings?: Record<string, unknown>;
  /** An extensions dir of its own (e.g. with a test-only extension beside ours); default: the shared one run.sh installed into. */
  extensionsDir?: string;
}

const quietSettings = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'chat.commandCenter.enabled': false,
  'git.enabled': false,
  'window.commandCenter': false,
  'editor.minimap.enabled': false,
  'files.autoSave': 'off',
  'security.workspace.trust.startupPrompt': 'never',
  'security.workspace.trust.banner': 'always',
  'debug.toolBarLocation': 'floating',
  // The Debug Console would take half the height; the panel and the editor need it more.
  'debug.internalConsoleOptions': 'neverOpen',
};

async function waitHealthy(url: string, child: ChildProcess, log: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode}; see ${log}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(250);
  }
  throw new Error(`code-server not healthy after ${timeoutMs} ms; see ${log}`);
}

export async function startCodeServer(opts: CodeServerOptions): Promise<CodeServer> {
  requireSetup();
  const dir = join(env.root, opts.name);
  const userData = join(dir, 'user-data');
  mkdirSync(join(userData, 'User'), { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({ ...quietSettings, ...opts.settings }, null, 2));
  const log = join(dir, 'code-server.log');
  return startupRetry(`code-server ${opts.name}`, 3, async () => {
    const port = await freePort();
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
    const args = [
      env.codeServer,
      '--config',
      config,
      '--user-data-dir',
      userData,
      '--extensions-dir',
      opts.extensionsDir ?? env.extensionsDir,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      ...(opts.trusted ? ['--disable-workspace-trust'] : []),
    ];
    const child = spawnTracked(process.execPath, args, { env: { ...process.env, ...opts.env }, log });
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitHealthy(url, child, log, 60_000);
    } catch (err) {
      await stopTracked(child);
      throw err;
    }
    return { url, name: opts.name, dir, log, close: () => stopTracked(child) };
  });
}

export interface Workbench {
  page: Page;
  browser: Browser;
  /** Saves artifacts/e2e/NAME.png. */
  shot(name: string): Promise<string>;
  close(): Promise<void>;
}

const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--disable-dev-shm-usage',
];

/** Opens the workbench on a folder in a fresh headless chromium profile. */
export async function openWorkbench(server: CodeServer, folder: string): Promise<Workbench> {
  mkdirSync(env.artifacts, { recursive: true });
  return startupRetry(`workbench ${server.name}`, 3, async (attempt) => {
    const profile = join(server.dir, `chromium-${attempt}`);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: env.chromium,
      headless: true,
      args: chromiumArgs,
      viewport: { width: 1400, height: 900 },
    });
    const browser = context.browser();
    const page = context.pages()[0] ?? (await context.newPage());
    try {
      await page.goto(`${server.url}/?folder=${encodeURIComponent(folder)}`, { timeout: 60_000 });
      await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
      // The explorer shows the folder once the workbench has restored.
      await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60_000 });
    } catch (err) {
      await context.close();
      throw err;
    }
    return {
      page,
      browser: browser as Browser,
      shot: async (name: string) => {
        const file = join(env.artifacts, `${name}.png`);
        await page.screenshot({ path: file });
        return file;
      },
      close: () => context.close(),
    };
  });
}

/** Runs a command by its title through the command palette, as a person would. */
export async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input[type="text"], .quick-input-widget .quick-input-box input').first();
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ timeout: 15_000 });
  await input.press('Enter');
}

/** Lists command-palette entries whose label contains `text`. */
export async function paletteEntries(page: Page, text: string, whileOpen?: () => Promise<unknown>): Promise<string[]> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input[type="text"]').first();
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`>${text}`);
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows
    .first()
    .waitFor({ timeout: 15_000 })
    .catch(() => undefined);
  const labels = await rows.locator('.label-name').allTextContents();
  await whileOpen?.();
  await input.press('Escape');
  return labels.map((l) => l.trim());
}

/** Opens a top-level workspace file by clicking it in the Explorer, as a new user does. */
export async function openFile(page: Page, name: string): Promise<void> {
  const explorer = page.locator('.explorer-folders-view');
  if (!(await explorer.isVisible())) await runCommand(page, 'View: Show Explorer');
  await explorer.waitFor({ state: 'visible', timeout: 30_000 });
  const row = explorer.locator('.monaco-list-row', {
    has: page.locator('.label-name', { hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
  });
  await row.first().waitFor({ state: 'visible', timeout: 30_000 });
  await row.first().click();
  await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 30_000 });
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().waitFor({ timeout: 30_000 });
}

/** Polls for a JSON file written by the extension (the self-test result). */
export async function waitForJson(file: string, timeoutMs: number): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      try {
        return JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        /* half-written; try again */
      }
    }
    await sleep(250);
  }
  throw new Error(`no JSON at ${file} after ${timeoutMs} ms`);
}

/** Copies a fixture folder into a fresh temporary workspace. */
export function makeWorkspace(name: string, files: Record<string, string>): string {
  const dir = join(env.root, 'workspaces', name);
  for (const [rel, text] of Object.entries(files)) {
    const file = join(dir, rel);
    mkdirSync(resolve(file, '..'), { recursive: true });
    writeFileSync(file, text);
  }
  return dir;
}

export interface EditorLine {
  /** 1-based line number from the gutter. */
  line: number;
  /** The source text as drawn. */
  text: string;
  /** Text drawn by decorations beside the line (CSS ::before/::after content, injected text). */
  extras: string[];
  /** Class names of whole-line overlays (e.g. the debugger's current line). */
  overlays: string[];
}

// Runs in the page (as a string: the project's TypeScript has no DOM types).
const READ_EDITOR_LINES = `(() => {
  const editor = document.querySelector('.editor-group-container.active .monaco-editor') || document.querySelector('.monaco-editor');
  if (!editor) return [];
  const topOf = (el) => Math.round(parseFloat(el.style.top || '0'));
  const numbers = new Map();
  editor.querySelectorAll('.margin-view-overlays > div').forEach((div) => {
    const n = Number((div.querySelector('.line-numbers') || {}).textContent);
    if (Number.isFinite(n) && n > 0) numbers.set(topOf(div), n);
  });
  const overlays = new Map();
  editor.querySelectorAll('.view-overlays > div').forEach((div) => {
    overlays.set(topOf(div), Array.from(div.children).map((c) => String(c.className)).filter(Boolean));
  });
  const pseudo = (el, which) => {
    const c = getComputedStyle(el, which).content;
    if (!c || c === 'none' || c === 'normal') return '';
    try { return JSON.parse(c); } catch { return c.replace(/^"|"$/g, ''); }
  };
  const out = [];
  editor.querySelectorAll('.view-lines > .view-line').forEach((lineEl) => {
    const top = topOf(lineEl);
    const extras = [];
    let text = '';
    lineEl.querySelectorAll('span > span').forEach((span) => {
      const before = pseudo(span, '::before');
      const after = pseudo(span, '::after');
      if (before) extras.push(before);
      if (after) extras.push(after);
      if (/\\bced-|inlay|injected/.test(String(span.className)) && span.textContent) extras.push(span.textContent);
      else text += span.textContent || '';
    });
    out.push({ line: numbers.has(top) ? numbers.get(top) : -1, text: text.replace(/\u00a0/g, ' '), extras, overlays: overlays.get(top) || [] });
  });
  return out.sort((a, b) => a.line - b.line);
})()`;

/** Reads the visible lines of the active editor with what decorations draw beside them. */
export async function editorLines(page: Page): Promise<EditorLine[]> {
  return (await page.evaluate(READ_EDITOR_LINES)) as EditorLine[];
}

/** Polls `read` until `ok` holds (a UI change is asynchronous); returns the last value read. Not a retry of an assertion: the assertion runs once on the result. */
export async function waitUntil<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await sleep(250);
    value = await read();
  }
  return value;
}

/** Texts of the notification toasts now shown. */
export async function notifications(page: Page): Promise<string[]> {
  return page.locator('.notifications-toasts .notification-toast .notification-list-item-message').allInnerTexts();
}
