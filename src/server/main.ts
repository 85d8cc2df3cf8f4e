// Entry point of the engine server: `node dist/server.js --stdio` (or
// `node --import tsx src/server/main.ts --stdio`). Logs go to stderr and the
// client's log channel, never to stdout (stdout carries the protocol).
import { ProposedFeatures, createConnection } from 'vscode-languageserver/node';
import { createLiveEngine } from './live-engine';
import { EngineServer } from './server';

const connection = createConnection(ProposedFeatures.all);
const log = (line: string) => connection.console.log(line);
const server = new EngineServer(connection, createLiveEngine({ log }), log);
server.listen();
// The client may vanish without a shutdown (a killed editor): never linger.
process.on('disconnect', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
// One failed background promise (a notification handler, a worker that died) must not take
// the server down with every other file's lenses: log it and keep serving.
process.on('unhandledRejection', (e) => log(`unhandled rejection: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
