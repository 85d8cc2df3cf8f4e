#!/usr/bin/env bash
# Runs every suite and prints one closing line "N passed, N failed".
# Suites: type check + lint + import cycles, node tests (unit, adapter, server, cli), the
# Python tracer tests under pytest on every installed Python 3.8–3.13 (in
# .venv-py3.X, made by scripts/python-env.sh), the Python integration tests
# (trainers, Parquet) in .venv, and the end-to-end suite in a real VS Code
# (code-server) when test/e2e/run.sh exists. Runners' counts come from their
# own machine-readable records (TAP, JUnit XML); a runner that leaves none failed.
set -uo pipefail
cd "$(dirname "$0")/.."
results=$(mktemp)
log() { printf '\n==== %s\n' "$*"; }
record() { echo "$1 $2 $3 ${4:-0}" >>"$results"; }   # suite passed failed [skipped]

# pytest_suite NAME PYTHON ARGS…: runs pytest and records what its JUnit XML says
# (scripts/junit-summary.py). No XML, no test in it, or an exit status that is
# not 0 without a failed test in the XML (a crash after the file was written) is
# a failure.
pytest_suite() {
  local name=$1 py=$2 xml counts rc p f s
  shift 2
  xml=$(mktemp -u --suffix=.xml)
  "$py" -m pytest -q -p no:cacheprovider --junitxml="$xml" "$@"
  rc=$?
  if counts=$(python3 scripts/junit-summary.py "$xml"); then
    read -r p f s <<<"$counts"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "$name: pytest exited $rc with no failed test in its XML"; f=1; fi
    record "$name" "$p" "$f" "$s"
  else
    echo "$name: pytest (exit $rc) left no summary"
    record "$name" 0 1
  fi
  rm -f "$xml"
}

log "typecheck"
if npm run -s typecheck; then record typecheck 1 0; else record typecheck 0 1; fi
log "lint"
if npm run -s lint; then record lint 1 0; else record lint 0 1; fi
log "format (prettier --check; npm run format fixes it)"
if npm run -s format:check; then record format 1 0; else record format 0 1; fi
log "import cycles"
if npm run -s check:cycles; then record cycles 1 0; else record cycles 0 1; fi

log "node tests"
shopt -s globstar nullglob
node_tests=()
for f in test/**/*.test.ts; do
  case "$f" in test/e2e/*) continue ;; esac
  node_tests+=("$f")
done
tap=$(mktemp)
node --import tsx --test --test-concurrency=2 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" "${node_tests[@]}"
np=$(grep -E '^# pass ' "$tap" | awk '{print $3}' | tail -n1)
nf=$(grep -E '^# fail ' "$tap" | awk '{print $3}' | tail -n1)
[ -n "$np" ] || { np=0; nf=1; echo "node test runner produced no summary"; }
record node "$np" "${nf:-0}"

for py in $(bash scripts/pythons.sh); do
  v=$("$py" -c 'import sys;print("%d.%d"%sys.version_info[:2])')
  log "python tracer tests: $py (pytest in .venv-py$v)"
  if [ -x ".venv-py$v/bin/python" ]; then
    PYTHONPATH=python-tracer pytest_suite "python-$v" ".venv-py$v/bin/python" python-tracer/tests
  else
    echo "no .venv-py$v: bash scripts/python-env.sh makes it"
    record "python-$v" 0 1
  fi
done

if [ -x .venv/bin/python ] && [ -d python-tracer/tests_venv ]; then
  log "python integration tests (.venv)"
  pytest_suite pytest .venv/bin/python python-tracer/tests_venv
fi

log "python import cycles"
if python3 python-tracer/tools/import_cycles.py; then record py-cycles 1 0; else record py-cycles 0 1; fi
if [ -x .venv/bin/python ]; then
  for tool in ruff mypy; do
    log "$tool (python-tracer/pyproject.toml)"
    if [ ! -x ".venv/bin/$tool" ]; then echo "$tool is not in .venv: bash scripts/python-env.sh"; record "$tool" 0 1
    elif [ "$tool" = ruff ] && .venv/bin/ruff check python-tracer/execverify python-tracer/tools; then record ruff 1 0
    elif [ "$tool" = mypy ] && (cd python-tracer && ../.venv/bin/mypy); then record mypy 1 0
    else record "$tool" 0 1; fi
  done
fi

if [ -x test/e2e/run.sh ]; then
  log "end-to-end (code-server + chromium)"
  out=$(mktemp)
  bash test/e2e/run.sh 2>&1 | tee "$out"
  p=$(grep -E '^# pass ' "$out" | awk '{print $3}' | tail -n1)
  f=$(grep -E '^# fail ' "$out" | awk '{print $3}' | tail -n1)
  [ -n "$p" ] || { p=0; f=1; echo "e2e produced no summary"; }
  record e2e "$p" "${f:-0}"
fi

log "summary"
awk '{ printf "  %-14s %5d passed %5d failed", $1, $2, $3; if ($4 > 0) printf " %5d skipped", $4; printf "\n"; P+=$2; F+=$3 }
  END { printf "%d passed, %d failed\n", P, F; exit (F > 0) }' "$results"
