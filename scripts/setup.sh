#!/usr/bin/env bash
# Sets the project up: npm packages, the build, and the Python venvs
# (scripts/python-env.sh: .venv, and .venv-py3.X with pytest for each
# interpreter). `npm run setup`; then `npm test` runs the suites. .ci/run does
# both on a fresh machine. See docs/development.md.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== npm ci"
npm ci --no-audit --no-fund
echo "== build"
npm run build

echo "== python venvs"
bash scripts/python-env.sh
