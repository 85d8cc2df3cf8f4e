#!/usr/bin/env bash
# Installs a real VS Code (code-server, from npm) into .e2e/ for the end-to-end
# suite, with the workarounds in ../shared/design/VSCODE-E2E.md; idempotent.
#
# Nothing here downloads an editor or a browser from the internet: code-server
# comes from the npm registry, the browser is Debian's chromium (installed by
# .ci/run), ripgrep is Debian's (pre-seeded into @vscode/ripgrep's download
# cache so its postinstall never goes to GitHub).
set -euo pipefail
cd "$(dirname "$0")/../.."

CODE_SERVER_VERSION=4.100.3   # the newest release that runs on Node 20
prefix=.e2e/code-server
marker="$prefix/.installed-$CODE_SERVER_VERSION"
bin="$prefix/node_modules/code-server/out/node/entry.js"

fail() { echo "e2e setup: $*" >&2; exit 1; }

command -v chromium >/dev/null 2>&1 || fail "chromium is missing: apt-get install chromium (.ci/run does this)"
command -v rg >/dev/null 2>&1 || fail "ripgrep is missing: apt-get install ripgrep (.ci/run does this)"
dpkg -s libkrb5-dev >/dev/null 2>&1 || fail "libkrb5-dev is missing (kerberos native module): apt-get install libkrb5-dev"

if [ -f "$marker" ] && [ -f "$bin" ]; then
  echo "e2e setup: code-server $CODE_SERVER_VERSION already installed in $prefix"
  exit 0
fi

echo "e2e setup: installing code-server $CODE_SERVER_VERSION into $prefix (a few minutes, once)"
start=$(date +%s)
rm -rf "$prefix"
mkdir -p "$prefix" .e2e/tmp

# @vscode/ripgrep's postinstall looks in $TMPDIR/vscode-ripgrep-cache-<ver>/
# before downloading; seed it with Debian's rg (code-server 4.100.3 pins
# @vscode/ripgrep 1.15.11, which fetches ripgrep v13.0.0-10).
case "$(uname -m)" in
  x86_64) rg_target=x86_64-unknown-linux-musl ;;
  aarch64) rg_target=aarch64-unknown-linux-musl ;;
  *) fail "unsupported architecture $(uname -m)" ;;
esac
export TMPDIR="$PWD/.e2e/tmp"
stage=$(mktemp -d)
cp "$(command -v rg)" "$stage/rg"
mkdir -p "$TMPDIR/vscode-ripgrep-cache-1.15.11"
tar -czf "$TMPDIR/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-$rg_target.tar.gz" -C "$stage" rg
rm -rf "$stage"

export npm_config_unsafe_perm=true   # code-server's postinstall refuses to run as root otherwise
export npm_config_yes=true           # node-pty's postinstall calls `npx node-gyp`
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
echo '{"private": true}' >"$prefix/package.json"
npm install --prefix "$prefix" --no-save --loglevel=error "code-server@$CODE_SERVER_VERSION"

[ -f "$bin" ] || fail "code-server installed but $bin is missing"
# Belt and braces: wherever @vscode/ripgrep ended up without a binary, link Debian's.
while IFS= read -r d; do
  if [ ! -x "$d/bin/rg" ]; then mkdir -p "$d/bin"; ln -sf "$(command -v rg)" "$d/bin/rg"; fi
done < <(find "$prefix/node_modules" -type d -path '*/@vscode/ripgrep' -prune)

version=$(node -p "require('./$prefix/node_modules/code-server/package.json').version")
[ "$version" = "$CODE_SERVER_VERSION" ] || fail "expected code-server $CODE_SERVER_VERSION, found $version"
touch "$marker"
echo "e2e setup: code-server $version installed in $(( $(date +%s) - start ))s ($(du -sh "$prefix" | cut -f1))"
