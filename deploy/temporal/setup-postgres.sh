#!/bin/sh
# docker-compose.yml's one-shot `temporal-schema` job, in the temporalio/admin-tools image: creates
# Temporal's two databases and the app's, and brings Temporal's to the image's schema version with
# temporal-sql-tool. `npm run stack` does the same natively (dev/stack/temporalSchema.ts).
# Safe to run again on an existing volume: creating what exists fails harmlessly, update-schema applies
# only what is missing, and any real problem (password, network) makes update-schema fail the job.
# Names come from deploy/stack.env (env_file); the passwords from .env (SQL_PASSWORD: the superuser's;
# TEMPORAL_DB_PASSWORD: the server's own login, TEMPORAL_DB_USER, which this job makes).
set -eu
: "${POSTGRES_SEEDS:?POSTGRES_SEEDS is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required (POSTGRES_PASSWORD in .env)}"
: "${TEMPORAL_DB_USER:?TEMPORAL_DB_USER is required}"
: "${TEMPORAL_DB_PASSWORD:?TEMPORAL_DB_PASSWORD is required (in .env)}"
: "${TEMPORAL_DB:?}" "${TEMPORAL_VISIBILITY_DB:?}" "${APP_DB:?}"

port=${DB_PORT:-5432}
# The admin-tools image keeps the schema files here; a test points this at the go-installed copy.
schema_root=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
admin_password=$SQL_PASSWORD

until nc -z -w 5 "$POSTGRES_SEEDS" "$port"; do
  echo "waiting for Postgres at $POSTGRES_SEEDS:$port"
  sleep 1
done

# As the superuser: databases and the server's login. As the server's login: its schema.
admin_sql() {
  SQL_PASSWORD=$admin_password temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}
server_sql() {
  SQL_PASSWORD=$TEMPORAL_DB_PASSWORD temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$TEMPORAL_DB_USER" "$@"
}
admin_psql() {
  PGPASSWORD=$admin_password psql -X -q -v ON_ERROR_STOP=1 -h "$POSTGRES_SEEDS" -p "$port" -U "$POSTGRES_USER" \
    -v login="$TEMPORAL_DB_USER" -v password="$TEMPORAL_DB_PASSWORD" "$@"
}

# The Temporal server's own login: no superuser, no CREATEDB or CREATEROLE; it owns its two databases and
# nothing else, so it cannot read the shop's tables nor change roles. The password follows .env on every run.
admin_psql -d postgres <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'login') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'login') \gexec
ALTER ROLE :"login" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'password';
SQL

for pair in "$TEMPORAL_DB:temporal" "$TEMPORAL_VISIBILITY_DB:visibility"; do
  database=${pair%%:*}
  schema=${pair#*:}
  admin_sql --db "$database" create-database 2>/dev/null || echo "database $database exists"
  # A volume made when the server ran as the superuser: its tables pass to the server's login.
  admin_psql -d "$database" <<'SQL'
SELECT format('ALTER DATABASE %I OWNER TO %I', current_database(), :'login') \gexec
ALTER SCHEMA public OWNER TO :"login";
SELECT format('ALTER TABLE public.%I OWNER TO %I', tablename, :'login')
  FROM pg_tables WHERE schemaname = 'public' AND tableowner <> :'login' \gexec
SELECT format('ALTER SEQUENCE public.%I OWNER TO %I', sequencename, :'login')
  FROM pg_sequences WHERE schemaname = 'public' AND sequenceowner <> :'login' \gexec
SQL
  server_sql --db "$database" setup-schema -v 0.0 2>/dev/null || echo "database $database has a schema already"
  server_sql --db "$database" update-schema -d "$schema_root/$schema/versioned"
  echo "database $database: Temporal $schema schema up to date, owned by $TEMPORAL_DB_USER"
done

# The app's own database, for local use; its tables come from the `migrate` job.
admin_sql --db "$APP_DB" create-database 2>/dev/null || echo "database $APP_DB exists"
echo 'schema setup complete'
