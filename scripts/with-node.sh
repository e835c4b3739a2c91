#!/usr/bin/env bash
# Runs a command on the project's pinned Node: deploy/stack.env's NODE_VERSION, the one the worker image runs,
# installed by scripts/setup.sh (which this runs first when it is missing). Its bin/ goes first on PATH, so
# `node`, `npm`, every `#!/usr/bin/env node` script (vitest, tsx) and every child started with
# process.execPath (workers, sandboxes, the demo's clients) run on it. The npm scripts that run the tests and
# the tools go through here; the production ones (start, ops, ...) do not: they run where the image's Node is.
#
#   bash scripts/with-node.sh <command> [<argument> ...]
#   bash scripts/with-node.sh --bin-dir      prints the folder to put first on PATH (.ci/run does)
set -euo pipefail

project_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(sed -n 's/^NODE_VERSION=//p' "$project_root/deploy/stack.env")
if [[ -z $version ]]; then
  echo "with-node: NODE_VERSION is missing from deploy/stack.env" >&2
  exit 1
fi
# The same folder as scripts/setup.sh's and dev/devtools/toolFolders.ts's.
tools_dir=${STACK_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/order-confirmation-mail/tools}
bin_dir="$tools_dir/node-$version/bin"
if [[ ! -x $bin_dir/node ]]; then
  bash "$project_root/scripts/setup.sh" >&2
fi

if [[ ${1:-} == --bin-dir ]]; then
  echo "$bin_dir"
  exit 0
fi
if (($# == 0)); then
  echo 'usage: bash scripts/with-node.sh <command> [<argument> ...] | --bin-dir' >&2
  exit 2
fi
export PATH="$bin_dir:$PATH"
exec "$@"
