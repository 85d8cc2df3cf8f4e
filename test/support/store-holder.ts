// Child process for the lock tests: opens the store in DIR (taking its lock),
// says on stdout whether it got it, and holds it until its stdin closes.
import { SampleStore } from '../../src/engine/dataset/store';

const dir = process.argv[2]!;
let store: SampleStore | undefined;
try {
  store = SampleStore.open(dir);
  process.stdout.write(`held ${store.tookOverFrom ?? '-'}\n`);
} catch (err) {
  process.stdout.write(`busy ${(err as Error).name}\n`);
}
process.stdin.resume();
process.stdin.on('end', () => {
  store?.close();
  process.exit(0);
});
