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
.venv/bin/pip install -q --disable-pip-version-check "${idx[@]}" -r python-tracer/requirements-dev.txt
.venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e python-tracer >/dev/null
