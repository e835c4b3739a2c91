#!/bin/sh
# docker-compose.yml's one-shot `temporal-schema` job, in the temporalio/admin-tools image: creates
# Temporal's two databases and the app's, and brings Temporal's to the image's schema version with
# temporal-sql-tool. `npm run stack` does the same natively (dev/stack/temporalSchema.ts).
# Safe to run again on an existing volume: creating what exists fails harmlessly, update-schema applies
# only what is missing, and any real problem (password, network) makes update-schema fail the job.
# Names come from deploy/stack.env (env_file); the password from .env (SQL_PASSWORD).
set -eu
: "${POSTGRES_SEEDS:?POSTGRES_SEEDS is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required (POSTGRES_PASSWORD in .env)}"
: "${TEMPORAL_DB:?}" "${TEMPORAL_VISIBILITY_DB:?}" "${APP_DB:?}"

port=${DB_PORT:-5432}
# The admin-tools image keeps the schema files here; a test points this at the go-installed copy.
schema_root=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}

until nc -z -w 5 "$POSTGRES_SEEDS" "$port"; do
  echo "waiting for Postgres at $POSTGRES_SEEDS:$port"
  sleep 1
done

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

for pair in "$TEMPORAL_DB:temporal" "$TEMPORAL_VISIBILITY_DB:visibility"; do
  database=${pair%%:*}
  schema=${pair#*:}
  sql --db "$database" create-database 2>/dev/null || echo "database $database exists"
  sql --db "$database" setup-schema -v 0.0 2>/dev/null || echo "database $database has a schema already"
  sql --db "$database" update-schema -d "$schema_root/$schema/versioned"
  echo "database $database: Temporal $schema schema up to date"
done

# The app's own database, for local use; its tables come from the `migrate` job.
sql --db "$APP_DB" create-database 2>/dev/null || echo "database $APP_DB exists"
echo 'schema setup complete'
