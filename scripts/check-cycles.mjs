// Import cycles in src/ (`npm run check:cycles`): madge over the TypeScript
// sources, type-only imports included. Fails on a cycle not listed in KNOWN,
// and on a KNOWN one that is gone, so the list only shrinks. Plain
// `npx madge --circular --extensions ts src` shows the same cycles.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import madge from 'madge';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Cycles owned by work in progress elsewhere, each with the way out.
const KNOWN = [];

const result = await madge(path.join(root, 'src'), { fileExtensions: ['ts'], tsConfig: path.join(root, 'tsconfig.json') });
const found = result.circular().map((cycle) => cycle.join(' > '));
const fresh = found.filter((c) => !KNOWN.includes(c));
const gone = KNOWN.filter((c) => !found.includes(c));
console.log(`import cycles in src/: ${found.length} (${found.length - fresh.length} known)`);
for (const c of found) console.log(`  ${fresh.includes(c) ? 'NEW  ' : 'known'} ${c}`);
for (const c of gone) console.log(`  gone  ${c} — remove it from KNOWN in scripts/check-cycles.mjs`);
if (fresh.length > 0) console.log('Break a new cycle: move what both sides need into a leaf module that imports neither.');
process.exit(fresh.length > 0 || gone.length > 0 ? 1 : 0);
