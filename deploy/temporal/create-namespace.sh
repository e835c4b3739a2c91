#!/bin/sh
# docker-compose.yml's one-shot `temporal-namespace` job, in the temporalio/admin-tools image: creates the
# namespace (the server image does not) and registers the search attributes the workflow upserts, before any
# worker starts. `npm run stack` does the same natively (dev/stack/temporalServer.ts).
# Names come from deploy/stack.env (env_file); TEMPORAL_ADDRESS from the service.
set -eu
: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}" "${TEMPORAL_NAMESPACE_RETENTION:?}"

until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  echo "waiting for the Temporal server at $TEMPORAL_ADDRESS"
  sleep 2
done

if temporal operator namespace describe -n "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; then
  echo "namespace $TEMPORAL_NAMESPACE exists"
else
  temporal operator namespace create -n "$TEMPORAL_NAMESPACE" --retention "$TEMPORAL_NAMESPACE_RETENTION" \
    --address "$TEMPORAL_ADDRESS"
  echo "namespace $TEMPORAL_NAMESPACE created"
fi

# TEMPORAL_SEARCH_ATTRIBUTES holds Name=Type pairs separated by spaces. A namespace created a moment ago is
# unknown to the operator API until the server's namespace registry refreshes (up to 10 s): retry.
for pair in ${TEMPORAL_SEARCH_ATTRIBUTES:-}; do
  name=${pair%%=*}
  type=${pair#*=}
  attempt=1
  until temporal operator search-attribute list -n "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS" 2>/dev/null |
    grep -qw "$name"; do
    if [ "$attempt" -gt 30 ]; then
      echo "could not register search attribute $name" >&2
      exit 1
    fi
    temporal operator search-attribute create -n "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS" \
      --name "$name" --type "$type" >/dev/null 2>&1 || sleep 2
    attempt=$((attempt + 1))
  done
  echo "search attribute $name ($type) registered"
done
