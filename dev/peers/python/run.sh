#!/usr/bin/env bash
# Runs one of the Python peers in this folder with the interpreter of the virtual environment that
# `bash scripts/setup.sh --python` built for this folder's requirements.txt (named after its hash, the same
# way setup.sh names it). The tests start every peer through this script:
#
#   dev/peers/python/run.sh order_service.py --copies 3 101 102
#   DATABASE_URL=… REDIS_URL=… MAIL_API_BASE_URL=… MAIL_API_KEY=… dev/peers/python/run.sh case_study_worker.py
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 <script.py> [arguments...]" >&2
  exit 2
fi
base=${PYTHON_PEERS_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/order-confirmation-mail}
venv="$base/python-$(sha256sum "$here/requirements.txt" | cut -c1-16)"
if [[ ! -f $venv/installed ]]; then
  echo "$venv is not built for $here/requirements.txt: run bash scripts/setup.sh --python" >&2
  exit 1
fi
script=$1
shift
# The Python client package (packages/client-python) from this checkout, as the order service installs it.
export PYTHONPATH="$here/../../../packages/client-python/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$venv/bin/python" "$here/$script" "$@"
