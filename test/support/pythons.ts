// The interpreters a test may use: every Python 3.8–3.13 this machine has, as
// scripts/pythons.sh lists them (the list CI's own suites use).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const REPO = path.resolve(__dirname, '../..');

/** Every installed interpreter's path (at least one, or the test fails saying so). */
export function installedPythons(): string[] {
  const found = execFileSync('bash', [path.join(REPO, 'scripts/pythons.sh')], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  assert.ok(found.length > 0, 'scripts/pythons.sh found no interpreter');
  return found;
}

/** The interpreter of one version, e.g. '3.12' (the test fails, naming it, when it is missing). */
export function pythonOf(version: string): string {
  const found = installedPythons().find((p) => p.endsWith(`python${version}`));
  assert.ok(found, `this test needs Python ${version} (scripts/pythons.sh found none)`);
  return found;
}
