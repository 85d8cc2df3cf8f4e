#!/usr/bin/env bash
# Creates .venv (Python 3.11) with the Python test and trainer dependencies.
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
.venv/bin/python -c "import pytest, pyarrow, datasets, trl, torch" || { echo "python-env: the venv is incomplete (see pip output above)" >&2; exit 1; }
.venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e python-tracer >/dev/null
