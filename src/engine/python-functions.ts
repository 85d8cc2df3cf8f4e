// Finds the Python functions a CodeLens (and the editor's Trace… command) can
// trace, by a line scan rather than a parser: it must stay fast on big files
// and keep working while a file does not parse (the tracer reports the syntax
// error when the user runs it).

/** A function defined in a Python source file. */
export interface PyFunction {
  name: string;
  /** 1-based line of the `def`. */
  line: number;
  /** Parameter text between the parentheses on the `def` line (may be partial for multi-line signatures). */
  params: string;
  /** Defined at module level, so a call expression in the module's namespace reaches it. */
  topLevel: boolean;
  async: boolean;
}

const DEF = /^([ \t]*)(async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(([^)]*)/;
const TRIPLE = /"""|'''/g;

/** Every `def` outside string literals, in source order. */
export function findFunctions(source: string): PyFunction[] {
  const found: PyFunction[] = [];
  const lines = source.split('\n');
  // The triple-quote delimiter we are inside of, if any: defs in docstrings are not code.
  let openString: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    if (openString === null) {
      const m = DEF.exec(text);
      if (m) {
        found.push({
          name: m[3] as string,
          line: i + 1,
          params: (m[4] as string).trim(),
          topLevel: (m[1] as string).length === 0,
          async: m[2] !== undefined,
        });
      }
    }
    if (text.includes('"""') || text.includes("'''")) openString = advanceStrings(text, openString);
  }
  return found;
}

function advanceStrings(text: string, open: string | null): string | null {
  // Comments may hold quotes; a `#` before any triple quote on a code line ends the scan.
  TRIPLE.lastIndex = 0;
  let state = open;
  let m: RegExpExecArray | null;
  while ((m = TRIPLE.exec(text)) !== null) {
    if (state === null) {
      const hash = text.indexOf('#');
      if (hash >= 0 && hash < m.index) break;
      state = m[0];
    } else if (m[0] === state) {
      state = null;
    }
  }
  return state;
}
