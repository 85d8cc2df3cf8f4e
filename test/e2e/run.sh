#!/usr/bin/env bash
# Runs the end-to-end suite in a real VS Code (code-server) driven through
# Debian's chromium: build, package the .vsix, set up code-server (cached),
# install the .vsix, run test/e2e/*.e2e.ts with node's test runner. The TAP
# "# pass N" / "# fail N" lines on stdout are what test/run-all.sh reads.
# Screenshots and, on failure, server logs go to artifacts/e2e/.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)
say() { echo "e2e: $*" >&2; }

# One run at a time per checkout: runs share execverify.vsix and artifacts/e2e.
mkdir -p .e2e
exec 9>.e2e/run.lock
if ! flock -n 9; then
  say "another end-to-end run is in progress; waiting for it"
  flock 9
fi

E2E_ROOT=$(mktemp -d /tmp/execverify-e2e.XXXXXX)
E2E_PIDS_FILE="$E2E_ROOT/pids"
E2E_ARTIFACTS="$PWD/artifacts/e2e"
: >"$E2E_PIDS_FILE"
cleanup() {
  local rc=$?
  # End every process group the suite started (code-server, model server), by id.
  while read -r pid; do
    [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null || true
  done <"$E2E_PIDS_FILE"
  sleep 0.5
  while read -r pid; do
    [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  done <"$E2E_PIDS_FILE"
  if [ "$rc" -ne 0 ]; then
    mkdir -p "$E2E_ARTIFACTS/logs"
    (cd "$E2E_ROOT" && find . -name '*.log' ! -path '*/chromium-*' ! -path '*/workspaces/*' | xargs -r cp --parents -t "$E2E_ARTIFACTS/logs/") 2>/dev/null || true
    say "logs kept in $E2E_ARTIFACTS/logs"
  fi
  rm -rf "$E2E_ROOT"
  say "finished in $(( $(date +%s) - started ))s"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. A test build: the shipped bundle without its one difference, the
# environment-gated self-test (src/extension/selftest.ts) the activation test reads.
say "building (test build, with the self-test)"
npm run -s build -- --test
[ -f dist/extension.js ] || { say "dist/extension.js was not built (is src/extension/extension.ts there?)"; exit 1; }

# 2. Package the .vsix the way a user would install it (package.sh refuses a test build unless told).
say "packaging"
EXECVERIFY_PACKAGE_TEST_BUILD=1 npm run -s package >"$E2E_ROOT/package.log" 2>&1 || { cat "$E2E_ROOT/package.log" >&2; exit 1; }
say "execverify.vsix: $(stat -c %s execverify.vsix) bytes, $(python3 -c 'import sys,zipfile; print(sum(n.startswith("extension/") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' execverify.vsix) files"

# 3. code-server (installed once, cached in .e2e/); one retry for a flaky install.
bash test/e2e/setup.sh >&2 || { say "setup failed once, retrying"; bash test/e2e/setup.sh >&2; }
E2E_CODE_SERVER="$PWD/.e2e/code-server/node_modules/code-server/out/node/entry.js"

# 4. Install the .vsix into a fresh extensions dir, as a user would.
E2E_EXTENSIONS_DIR="$E2E_ROOT/extensions"
mkdir -p "$E2E_EXTENSIONS_DIR" "$E2E_ARTIFACTS"
rm -rf "$E2E_ARTIFACTS"/*.png "$E2E_ARTIFACTS/logs"
node "$E2E_CODE_SERVER" --extensions-dir "$E2E_EXTENSIONS_DIR" --user-data-dir "$E2E_ROOT/install-user-data" \
  --install-extension "$PWD/execverify.vsix" --force >"$E2E_ROOT/install.log" 2>&1 9>&- \
  || { cat "$E2E_ROOT/install.log" >&2; exit 1; }
ls "$E2E_EXTENSIONS_DIR" | grep -q '^execverify\.execverify-' || { cat "$E2E_ROOT/install.log" >&2; say "the .vsix did not install"; exit 1; }

# 5. The suite: one file at a time (each starts its own code-server + chromium).
export E2E_ROOT E2E_PIDS_FILE E2E_ARTIFACTS E2E_CODE_SERVER E2E_EXTENSIONS_DIR
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test/e2e/*.e2e.ts)
say "running ${#files[@]} file(s)"
# 9>&-: the lock is not inherited by the processes the suite starts.
node --import tsx --test --test-concurrency=1 --test-reporter=tap "${files[@]}" 9>&-
