/** Where a process writes its log lines (the extension's output channel, the server's console); never given a key. */
export type Log = (line: string) => void;
