#!/usr/bin/env bash
# Releases both order-service clients at the workers' version (package.json's "version"): the npm package
# @order-confirmation-mail/client and the Python package order-confirmation-mail-client. It builds them, runs
# their tests (test/packages: packed into fresh consumers, on the lowest and newest Temporal of their ranges,
# against a dev server the tests start), then publishes to the private registries the environment names:
#
#   NPM_REGISTRY=https://npm.example.internal/ \
#   TWINE_REPOSITORY_URL=https://pypi.example.internal/ TWINE_USERNAME=... TWINE_PASSWORD=... \
#     bash scripts/release-clients.sh [--dry-run]
#
# npm reads the registry's token from ~/.npmrc (//npm.example.internal/:_authToken=...); twine reads its
# TWINE_* variables. --dry-run does everything but the upload (npm publish --dry-run, twine check), and
# needs neither registry. See CHANGELOG.md for which client goes with which worker.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dry_run=false
for argument in "$@"; do
  case $argument in
    --dry-run) dry_run=true ;;
    *)
      echo "release-clients: unknown option: $argument (known: --dry-run)" >&2
      exit 2
      ;;
  esac
done

# The build tools twine and build, pinned, in a venv of their own (not the Python peers' venv).
BUILD_VERSION=1.6.1
TWINE_VERSION=7.0.0

step() { printf '\n=== %s  %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$*"; }
fail() {
  echo "release-clients: $*" >&2
  exit 1
}

PATH="$(bash scripts/with-node.sh --bin-dir):$PATH"
export PATH

version=$(node -p 'require("./package.json").version')
npm_version=$(node -p 'require("./packages/client/package.json").version')
python_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' packages/client-python/pyproject.toml)
[[ $npm_version == "$version" && $python_version == "$version" ]] ||
  fail "versions differ: workers $version, npm client $npm_version, Python client $python_version (set all three)"
grep -q "^## $version\b" CHANGELOG.md || fail "CHANGELOG.md has no section '## $version'"

if [[ $dry_run == false ]]; then
  # Never the public registries: a release goes where the environment says, or nowhere.
  [[ -n ${NPM_REGISTRY:-} ]] || fail 'NPM_REGISTRY is not set (the private npm registry URL)'
  [[ -n ${TWINE_REPOSITORY_URL:-} ]] || fail 'TWINE_REPOSITORY_URL is not set (the private Python index upload URL)'
fi
step "releasing the clients at $version$([[ $dry_run == true ]] && echo ' (dry run: no upload)')"

work=$(mktemp -d "${TMPDIR:-/tmp}/release-clients-XXXXXX")
trap 'rm -rf "$work"' EXIT

step 'build: the npm client'
npm run --silent build:client

step 'test: test/packages (both clients, packed, in fresh consumers)'
npx --no-install vitest run test/packages

step 'build: the Python client (sdist and wheel)'
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "build==$BUILD_VERSION" "twine==$TWINE_VERSION"
# Built from a copy: setuptools leaves build/ and egg-info beside the sources it builds.
cp -r packages/client-python "$work/client-python"
"$work/venv/bin/python" -m build --outdir "$work/python-dist" "$work/client-python"
"$work/venv/bin/python" -m twine check --strict "$work/python-dist"/*
ls "$work/python-dist"

if [[ $dry_run == true ]]; then
  step 'publish (dry run): npm'
  if [[ -n ${NPM_REGISTRY:-} ]]; then
    npm publish --dry-run --workspace @order-confirmation-mail/client --registry "$NPM_REGISTRY"
  else
    # No registry to ask (npm would retry an unresolvable one for a minute): offline.
    npm publish --dry-run --offline --workspace @order-confirmation-mail/client
  fi
  step "dry run done: $version built, tested and checked; nothing uploaded"
  exit 0
fi

step "publish: npm to $NPM_REGISTRY"
npm publish --workspace @order-confirmation-mail/client --registry "$NPM_REGISTRY"
step "publish: Python to $TWINE_REPOSITORY_URL"
"$work/venv/bin/python" -m twine upload --non-interactive --repository-url "$TWINE_REPOSITORY_URL" "$work/python-dist"/*
step "released $version"
