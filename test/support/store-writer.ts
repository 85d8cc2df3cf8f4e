// Child process for the kill tests: appends records to a store as fast as it
// can until killed, printing the count every 50 records.
import { SampleStore } from '../../src/engine/dataset/store';
import { sampleInput } from './sample-records';

const dir = process.argv[2]!;
const store = SampleStore.open(dir);
let n = store.size;
for (;;) {
  // Large-ish code so a write is more than one page: a torn line is possible.
  store.add(sampleInput(n, { code: `def f${n % 7}(x):\n    y = x + ${n}\n    return y\n# ${'pad '.repeat(2000)}\n` }));
  n += 1;
  if (n % 50 === 0) process.stdout.write(`${n}\n`);
}
