// Import this first in an extension unit test: every later `require('vscode')`
// (the extension's `import * as vscode from 'vscode'`) gets the fake in
// test/support/fake-vscode.ts instead of the real editor API.
import Module from 'node:module';

const fakePath = require.resolve('./fake-vscode.ts');
const table = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const original = table._resolveFilename;
table._resolveFilename = function (request: string, ...rest: unknown[]) {
  return request === 'vscode' ? fakePath : original.call(this, request, ...rest);
};
