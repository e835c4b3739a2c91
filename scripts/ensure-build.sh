#!/usr/bin/env bash
# Runs before the production npm scripts (start, db:migrate, start-mail, setup, ops), which run the compiled
# JavaScript in dist/. In a checkout, dist/ may be missing or older than the sources, and an operator typing
# `npm run ops -- status 123` should get the CLI, not "Cannot find module". So: build when src/ exists and
# dist/ is missing or older than any file under src/. Where src/ is absent (the worker image ships dist/ alone),
# it does nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ -d src ]] || exit 0
stamp=dist/.built-from-src
if [[ -f $stamp ]] && [[ -z $(find src package.json tsconfig.build.json -newer "$stamp" -print -quit) ]]; then
  exit 0
fi
echo "dist/ is missing or older than src/: building it first (npm run build)" >&2
npm run --silent build >&2
