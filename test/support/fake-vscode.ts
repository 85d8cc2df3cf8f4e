// A small fake of the `vscode` module for the extension's unit tests: just the
// API the extension uses, with scripted answers for the UI (input boxes, quick
// picks, message buttons) and a record of what was shown. Loaded in place of
// 'vscode' by test/support/use-fake-vscode.ts.
/* eslint-disable @typescript-eslint/no-explicit-any */

type Listener<T> = (e: T) => any;

export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  static from(...items: { dispose(): any }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly authority = '',
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static parse(s: string): Uri {
    const m = /^([a-z-]+):\/\/([^/]*)(.*)$/.exec(s);
    return m ? new Uri(m[1]!, decodeURIComponent(m[3]!), m[2]!) : new Uri('file', s);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join('/').replace(/\/+/g, '/'), base.authority);
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.authority}${this.path}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export class MarkdownString {
  value = '';
  appendCodeblock(code: string, _lang?: string): this {
    this.value += `\n\`\`\`\n${code}\n\`\`\`\n`;
    return this;
  }
  appendMarkdown(s: string): this {
    this.value += s;
    return this;
  }
}
export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {}
}
export class DebugAdapterInlineImplementation {
  constructor(readonly implementation: unknown) {}
}
export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; arguments?: unknown[] },
  ) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum DecorationRangeBehavior {
  OpenOpen = 0,
  ClosedClosed = 1,
}

// ------------------------------------------------------------------ the world a test scripts

export interface ShownMessage {
  severity: 'info' | 'warning' | 'error';
  message: string;
  items: string[];
}

export interface FakeDocument {
  uri: Uri;
  languageId: string;
  lineCount: number;
  getText(): string;
  lineAt(line: number): { range: Range; text: string };
}

export function makeDocument(path: string, text: string, languageId = 'python'): FakeDocument {
  const lines = text.split('\n');
  return {
    uri: Uri.file(path),
    languageId,
    lineCount: lines.length,
    getText: () => text,
    lineAt: (line: number) => ({ text: lines[line] ?? '', range: new Range(new Position(line, 0), new Position(line, (lines[line] ?? '').length)) }),
  };
}

export interface FakeEditor {
  document: FakeDocument;
  selection: { active: Position };
  decorations: Map<FakeDecorationType, { range: Range; renderOptions?: any; hoverMessage?: any }[]>;
  setDecorations(type: FakeDecorationType, options: any[]): void;
}

export function makeEditor(doc: FakeDocument, cursorLine = 0): FakeEditor {
  const editor: FakeEditor = {
    document: doc,
    selection: { active: new Position(cursorLine, 0) },
    decorations: new Map(),
    setDecorations(type, options) {
      editor.decorations.set(type, options);
    },
  };
  return editor;
}

export class FakeDecorationType {
  constructor(readonly options: any) {}
  dispose(): void {}
}

export interface FakeWebviewPanel {
  viewType: string;
  title: string;
  webview: {
    html: string;
    options: any;
    cspSource: string;
    posted: unknown[];
    asWebviewUri(uri: Uri): Uri;
    postMessage(m: unknown): Promise<boolean>;
    onDidReceiveMessage(l: Listener<unknown>): Disposable;
    /** Test side: the webview sends a message. */
    send(m: unknown): void;
  };
  reveal(): void;
  onDidDispose(l: Listener<void>): Disposable;
  dispose(): void;
}

function makeWebviewPanel(viewType: string, title: string): FakeWebviewPanel {
  const received = new EventEmitter<unknown>();
  const disposed = new EventEmitter<void>();
  const panel: FakeWebviewPanel = {
    viewType,
    title,
    webview: {
      html: '',
      options: {},
      cspSource: 'https://webview.test',
      posted: [],
      asWebviewUri: (uri) => Uri.parse(`https://webview.test${uri.path}`),
      async postMessage(m) {
        panel.webview.posted.push(m);
        return true;
      },
      onDidReceiveMessage: received.event,
      send: (m) => received.fire(m),
    },
    reveal() {},
    onDidDispose: disposed.event,
    dispose: () => disposed.fire(),
  };
  return panel;
}

/** Everything a test can script or inspect. Reset between tests with `resetFake()`. */
export const fake = {
  commands: new Map<string, (...args: any[]) => any>(),
  executed: [] as { command: string; args: unknown[] }[],
  messages: [] as ShownMessage[],
  /** Answers for message buttons, in order (undefined: dismissed). */
  messageAnswers: [] as (string | undefined)[],
  inputAnswers: [] as (string | undefined)[],
  inputBoxes: [] as any[],
  /** Each quick pick answer chooses from the items shown. */
  quickPickAnswers: [] as ((items: any[]) => any)[],
  quickPicks: [] as any[][],
  saveDialogAnswers: [] as (Uri | undefined)[],
  outputLines: [] as string[],
  statusItems: [] as any[],
  decorationTypes: [] as FakeDecorationType[],
  panels: [] as FakeWebviewPanel[],
  serializers: new Map<string, any>(),
  visibleTextEditors: [] as FakeEditor[],
  activeTextEditor: undefined as FakeEditor | undefined,
  /** User (global) settings, by full key. */
  configuration: {} as Record<string, unknown>,
  /** Workspace settings (.vscode/settings.json), by full key: they win over user settings in `get`, as in VS Code. */
  workspaceConfiguration: {} as Record<string, unknown>,
  configurationDefaults: {} as Record<string, unknown>,
  trusted: true,
  workspaceFolders: [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }] as any[] | undefined,
  debugStarts: [] as { folder: unknown; config: any }[],
  activeDebugSession: undefined as any,
  customRequests: [] as { command: string; args: unknown }[],
  /** registerDebugAdapterTrackerFactory's registrations: a test creates trackers from them as VS Code would. */
  trackerFactories: [] as { type: string; factory: any }[],
  /** window.withProgress calls: their options, and the user's Cancel. */
  progress: [] as { options: any; cancel(): void }[],
  emitters: {
    visibleEditors: new EventEmitter<FakeEditor[]>(),
    textChange: new EventEmitter<any>(),
    config: new EventEmitter<any>(),
    trustGranted: new EventEmitter<void>(),
    debugCustomEvent: new EventEmitter<any>(),
    debugTerminate: new EventEmitter<any>(),
    activeDebugSession: new EventEmitter<any>(),
  },
};

export function resetFake(): void {
  fake.commands.clear();
  fake.executed = [];
  fake.messages = [];
  fake.messageAnswers = [];
  fake.inputAnswers = [];
  fake.inputBoxes = [];
  fake.quickPickAnswers = [];
  fake.quickPicks = [];
  fake.saveDialogAnswers = [];
  fake.outputLines = [];
  fake.statusItems = [];
  fake.decorationTypes = [];
  fake.panels = [];
  fake.serializers.clear();
  fake.visibleTextEditors = [];
  fake.activeTextEditor = undefined;
  fake.configuration = {};
  fake.workspaceConfiguration = {};
  fake.trusted = true;
  fake.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
  fake.debugStarts = [];
  fake.activeDebugSession = undefined;
  fake.customRequests = [];
  fake.trackerFactories = [];
  fake.progress = [];
  for (const e of Object.values(fake.emitters)) e.dispose();
}

/** A fake extension context; `secrets` is an in-memory SecretStorage. */
export function makeContext(extensionPath = '/ext', packageJSON: unknown = {}): any {
  const secrets = new Map<string, string>();
  const secretChanged = new EventEmitter<{ key: string }>();
  return {
    subscriptions: [] as { dispose(): any }[],
    extensionUri: Uri.file(extensionPath),
    extensionPath,
    extension: { packageJSON },
    asAbsolutePath: (p: string) => `${extensionPath}/${p}`,
    globalStorageUri: Uri.file(`${extensionPath}/globalStorage`),
    secrets: {
      get: async (k: string) => secrets.get(k),
      store: async (k: string, v: string) => {
        secrets.set(k, v);
        secretChanged.fire({ key: k });
      },
      delete: async (k: string) => {
        secrets.delete(k);
        secretChanged.fire({ key: k });
      },
      onDidChange: secretChanged.event,
      /** Test side: what is stored. */
      _all: secrets,
    },
  };
}

function show(severity: ShownMessage['severity']) {
  return async (message: string, ...items: any[]) => {
    const labels = items.filter((i) => typeof i === 'string');
    fake.messages.push({ severity, message, items: labels });
    return fake.messageAnswers.shift();
  };
}

export const window = {
  withProgress: async (options: any, task: (progress: { report(value: unknown): void }, token: any) => Promise<unknown>) => {
    const source = new CancellationTokenSource();
    fake.progress.push({ options, cancel: () => source.cancel() });
    return task({ report: () => undefined }, source.token);
  },
  createOutputChannel: (name: string) => ({
    name,
    appendLine: (l: string) => fake.outputLines.push(l),
    append: (l: string) => fake.outputLines.push(l),
    show: () => {},
    dispose: () => {},
  }),
  showInformationMessage: show('info'),
  showWarningMessage: show('warning'),
  showErrorMessage: show('error'),
  showInputBox: async (options: any) => {
    fake.inputBoxes.push(options);
    return fake.inputAnswers.shift();
  },
  showQuickPick: async (items: any[]) => {
    fake.quickPicks.push(items);
    const answer = fake.quickPickAnswers.shift();
    return answer ? answer(items) : undefined;
  },
  showSaveDialog: async () => fake.saveDialogAnswers.shift(),
  createStatusBarItem: (id: string) => {
    const item = {
      id,
      text: '',
      tooltip: undefined as unknown,
      command: undefined as unknown,
      backgroundColor: undefined as unknown,
      name: '',
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {},
    };
    fake.statusItems.push(item);
    return item;
  },
  createTextEditorDecorationType: (options: any) => {
    const t = new FakeDecorationType(options);
    fake.decorationTypes.push(t);
    return t;
  },
  get visibleTextEditors() {
    return fake.visibleTextEditors;
  },
  get activeTextEditor() {
    return fake.activeTextEditor;
  },
  onDidChangeVisibleTextEditors: (l: Listener<FakeEditor[]>) => fake.emitters.visibleEditors.event(l),
  createWebviewPanel: (viewType: string, title: string) => {
    const p = makeWebviewPanel(viewType, title);
    fake.panels.push(p);
    return p;
  },
  registerWebviewPanelSerializer: (viewType: string, serializer: any) => {
    fake.serializers.set(viewType, serializer);
    return new Disposable(() => fake.serializers.delete(viewType));
  },
  /** Test side: VS Code restores a panel after a reload. */
  _restorePanel: async (viewType: string, state: unknown) => {
    const p = makeWebviewPanel(viewType, 'restored');
    fake.panels.push(p);
    await fake.serializers.get(viewType)?.deserializeWebviewPanel(p, state);
    return p;
  },
};

export const workspace = {
  getConfiguration: (section: string) => ({
    get: <T>(key: string, dflt?: T) => {
      const full = `${section}.${key}`;
      // Like VS Code without restrictedConfigurations applied: the workspace value wins, trusted or not.
      if (full in fake.workspaceConfiguration) return fake.workspaceConfiguration[full] as T;
      return (full in fake.configuration ? fake.configuration[full] : full in fake.configurationDefaults ? fake.configurationDefaults[full] : dflt) as T;
    },
    inspect: (key: string) => {
      const full = `${section}.${key}`;
      return {
        key: full,
        defaultValue: fake.configurationDefaults[full],
        globalValue: fake.configuration[full],
        workspaceValue: fake.workspaceConfiguration[full],
        workspaceFolderValue: undefined,
      };
    },
  }),
  get isTrusted() {
    return fake.trusted;
  },
  get workspaceFolders() {
    return fake.workspaceFolders;
  },
  getWorkspaceFolder: (_uri: Uri) => fake.workspaceFolders?.[0],
  onDidGrantWorkspaceTrust: (l: Listener<void>) => fake.emitters.trustGranted.event(l),
  onDidChangeConfiguration: (l: Listener<any>) => fake.emitters.config.event(l),
  onDidChangeTextDocument: (l: Listener<any>) => fake.emitters.textChange.event(l),
};

export const commands = {
  registerCommand: (id: string, fn: (...args: any[]) => any) => {
    if (fake.commands.has(id)) throw new Error(`command ${id} registered twice`);
    fake.commands.set(id, fn);
    return new Disposable(() => fake.commands.delete(id));
  },
  executeCommand: async (id: string, ...args: unknown[]) => {
    fake.executed.push({ command: id, args });
    const fn = fake.commands.get(id);
    return fn ? fn(...args) : undefined;
  },
  getCommands: async () => [...fake.commands.keys()],
};

export const debug = {
  startDebugging: async (folder: unknown, config: any) => {
    fake.debugStarts.push({ folder, config });
    return true;
  },
  get activeDebugSession() {
    return fake.activeDebugSession;
  },
  onDidReceiveDebugSessionCustomEvent: (l: Listener<any>) => fake.emitters.debugCustomEvent.event(l),
  onDidTerminateDebugSession: (l: Listener<any>) => fake.emitters.debugTerminate.event(l),
  onDidChangeActiveDebugSession: (l: Listener<any>) => fake.emitters.activeDebugSession.event(l),
  registerDebugAdapterDescriptorFactory: () => new Disposable(),
  registerDebugConfigurationProvider: () => new Disposable(),
  registerDebugAdapterTrackerFactory: (type: string, factory: any) => {
    const entry = { type, factory };
    fake.trackerFactories.push(entry);
    return new Disposable(() => void fake.trackerFactories.splice(fake.trackerFactories.indexOf(entry), 1));
  },
};

/** A debug session as the extension sees it; custom requests are recorded. */
export function makeDebugSession(id: string, type = 'execverify'): any {
  return {
    id,
    type,
    name: id,
    configuration: {},
    customRequest: async (command: string, args: unknown) => {
      fake.customRequests.push({ command, args });
      return {};
    },
  };
}
