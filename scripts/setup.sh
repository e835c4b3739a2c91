#!/usr/bin/env bash
# Makes this machine ready to run the project: the `temporal` CLI (its dev server backs the tests and the
# demo) and, with --browser, Chromium and CJK fonts (Japanese text needs them). Used by `npm test`
# (pretest), `npm run setup:tools`, `npm run demo` and `.ci/run`. Idempotent, and quick when all is present.
#
#   bash scripts/setup.sh [--browser]
#
# The CLI is searched for in the same order as src/devtools/findTemporalCli.ts: $TEMPORAL_CLI_PATH, PATH,
# then Go's install directory.
set -euo pipefail

# Later tags carry a `replace` directive in go.mod, which `go install pkg@version` refuses.
TEMPORAL_CLI_MODULE=github.com/temporalio/cli/cmd/temporal@v1.5.1
BROWSER_PACKAGES=(chromium fonts-noto-cjk)

want_browser=false
for argument in "$@"; do
  case "$argument" in
    --browser) want_browser=true ;;
    -h | --help)
      sed -n '2,9p' "$0"
      exit 0
      ;;
    *)
      echo "setup: unknown option: $argument (known: --browser)" >&2
      exit 2
      ;;
  esac
done

is_executable_file() { [[ -f $1 && -x $1 ]]; }

# Where `go install` puts binaries ($GOBIN, else the first GOPATH entry's bin), one per line; without Go,
# Go's default GOPATH, where an earlier install may still sit.
go_bin_directories() {
  if ! command -v go >/dev/null 2>&1; then
    echo "${HOME:-}/go/bin"
    return
  fi
  local gobin gopath
  { read -r gobin; read -r gopath; } < <(go env GOBIN GOPATH)
  [[ -z $gobin ]] || echo "$gobin"
  [[ -z $gopath ]] || echo "${gopath%%:*}/bin"
}

find_temporal_cli() {
  if [[ -n ${TEMPORAL_CLI_PATH:-} ]] && is_executable_file "$TEMPORAL_CLI_PATH"; then
    echo "$TEMPORAL_CLI_PATH"
    return
  fi
  if command -v temporal >/dev/null 2>&1; then
    command -v temporal
    return
  fi
  local directory
  while read -r directory; do
    if is_executable_file "$directory/temporal"; then
      echo "$directory/temporal"
      return
    fi
  done < <(go_bin_directories)
}

ensure_temporal_cli() {
  if [[ -n ${TEMPORAL_CLI_PATH:-} ]] && ! is_executable_file "$TEMPORAL_CLI_PATH"; then
    echo "temporal CLI: TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file; ignoring it"
  fi
  local cli
  cli=$(find_temporal_cli)
  if [[ -z $cli ]]; then
    if ! command -v go >/dev/null 2>&1; then
      echo "temporal CLI: not found and no Go toolchain; the tests will try the SDK's download (needs internet)"
      return
    fi
    echo "temporal CLI: not found; go install $TEMPORAL_CLI_MODULE (about 3 min on a new machine)"
    go install "$TEMPORAL_CLI_MODULE"
    cli=$(find_temporal_cli)
    if [[ -z $cli ]]; then
      echo "temporal CLI: go install finished but no binary in $(go_bin_directories | tr '\n' ' ')" >&2
      exit 1
    fi
  fi
  # A go-installed build reports 0.0.0-DEV; the server and UI versions in brackets are the useful part.
  echo "temporal CLI: $cli ($("$cli" --version 2>/dev/null || echo 'version unknown'))"
}

is_debian_package_installed() {
  [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == 'install ok installed' ]]
}

ensure_browser() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "browser: not a Debian system; install ${BROWSER_PACKAGES[*]} (or equivalents) yourself"
    return
  fi
  local package missing=()
  for package in "${BROWSER_PACKAGES[@]}"; do
    if is_debian_package_installed "$package"; then
      echo "$package: installed"
    else
      missing+=("$package")
    fi
  done
  ((${#missing[@]} > 0)) || return 0
  if [[ $(id -u) != 0 ]]; then
    echo "browser: ${missing[*]} missing; not root, skipping (run: sudo apt-get install ${missing[*]})"
    return
  fi
  echo "browser: installing ${missing[*]} with apt-get"
  # Other sessions on the machine may hold the apt lock for a while; wait for it instead of failing.
  local apt=(apt-get -qq -o DPkg::Lock::Timeout=300)
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" update
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
  for package in "${missing[@]}"; do
    is_debian_package_installed "$package" || { echo "$package: still missing after apt-get" >&2; exit 1; }
    echo "$package: installed now"
  done
}

ensure_temporal_cli
if [[ $want_browser == true ]]; then ensure_browser; fi
