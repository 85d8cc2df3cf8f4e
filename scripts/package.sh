#!/usr/bin/env bash
# Packages the extension as execverify.vsix with vsce, from a staging copy of
# only the top-level paths that can ship: vsce walks every file under its
# working directory (.venv, .e2e, .git: minutes) before .vscodeignore filters.
# .vscodeignore still decides, file by file, what goes in. `--list` prints the
# files instead (vsce ls).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/extension.js ] || { echo "package: dist/extension.js is missing; run npm run build first" >&2; exit 1; }
# A test build (npm run build -- --test, as test/e2e/run.sh makes) carries the self-test: never ship it.
if grep -q EXECVERIFY_SELFTEST_OUT dist/extension.js && [ "${EXECVERIFY_PACKAGE_TEST_BUILD:-}" != 1 ]; then
  echo "package: dist/ holds a test build (with the self-test); run npm run build first" >&2
  exit 1
fi
stage=$(mktemp -d /tmp/execverify-vsix.XXXXXX)
trap 'rm -rf "$stage"' EXIT
for p in package.json README.md LICENSE CHANGELOG.md .vscodeignore dist media docs python-tracer; do
  [ -e "$p" ] && cp -r "$p" "$stage/"
done
# vsce lets a negated .vscodeignore pattern win over any later ignore, so
# bytecode under python-tracer/execverify/ cannot be excluded there.
find "$stage" -name __pycache__ -type d -prune -exec rm -rf {} +
root=$PWD
vsce="$root/node_modules/.bin/vsce"
# README links point at docs/, which ship in the .vsix: keep them relative.
if [ "${1:-}" = "--list" ]; then
  (cd "$stage" && "$vsce" ls --no-dependencies)
else
  (cd "$stage" && "$vsce" package --no-dependencies --no-rewrite-relative-links --out "$root/execverify.vsix")
fi
