#!/usr/bin/env bash
# Creates .venv (Python 3.11) with the Python test and trainer dependencies,
# and one small venv per installed interpreter (.venv-py3.8 … .venv-py3.13,
# pytest only) in which test/run-all.sh runs python-tracer/tests.
# pip's default index is unreachable on these machines, so the local mirror is
# named explicitly (pip would otherwise wait on retries).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${EXECVERIFY_VENV_PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
idx=()
for d in /opt/pypi/simple /opt/pypi-more/simple; do
  if [ -d "$d" ]; then
    if [ ${#idx[@]} -eq 0 ]; then idx+=(--index-url "file://$d"); else idx+=(--extra-index-url "file://$d"); fi
  fi
done
[ -d /opt/wheels ] && idx+=(--find-links /opt/wheels)
# The second index lacks most packages; pip says so once per package — noise, not news.
.venv/bin/pip install -q --disable-pip-version-check "${idx[@]}" -r python-tracer/requirements-dev.txt 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -c "import pytest, pyarrow, datasets, trl, torch, ray" || { echo "python-env: the venv is incomplete (see pip output above)" >&2; exit 1; }
.venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e python-tracer >/dev/null

# pytest for every interpreter of scripts/pythons.sh. The mirror's pytest (8.4.2,
# 9.1.1) installs on 3.11+ only: 8.4.2 needs 3.9, its iniconfig 2.3.0 needs 3.10
# and its tomli is a cp311 wheel. Older Pythons get Debian 12's pytest 7.2.1 and
# its dependencies (pure Python, 3.7+) unpacked into the venv. A venv that ends
# up without pytest is said here and is a failed suite in test/run-all.sh.
debian_pytest() { # venv
  local debs sp
  debs=$(mktemp -d)
  local pkgs=(python3-pytest python3-pluggy python3-iniconfig python3-packaging python3-attr python3-exceptiongroup python3-tomli)
  (cd "$debs" && { apt-get download -q "${pkgs[@]}" || { apt-get update -q && apt-get download -q "${pkgs[@]}"; }; }) >/dev/null 2>&1 || {
    rm -rf "$debs"
    return 1
  }
  sp=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$debs/root"; done
  cp -r "$debs/root/usr/lib/python3/dist-packages/." "$sp/"
  rm -rf "$debs"
}
for py in $(bash scripts/pythons.sh); do
  v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=.venv-py$v
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  if ! "$venv/bin/python" -c "import pytest" 2>/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check "${idx[@]}" pytest >/dev/null 2>&1 || debian_pytest "$venv" || true
  fi
  echo "python-env: $venv: $("$venv/bin/python" -m pytest --version 2>&1 | tail -n 1)"
done
