// docker-compose.yml and the native stack (`npm run stack`) must describe the same topology: the same image
// and binary versions, the same database names and shards, the same namespace and search attributes, and
// workers configured through the same variable names. deploy/stack.env is the one place these live; this
// test reads docker-compose.yml and the Dockerfile and fails when either drifts from it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { devServerSearchAttributes } from '../../dev/devtools/searchAttributeFlags';
import {
  loadStackSettings,
  parseEnvFile,
  PROJECT_ROOT,
  STACK_ENV_PATH,
  type StackSettings,
} from '../../dev/stack/stackSettings';
import { stackWorkerEnvironment } from '../../dev/stack/workerFleet';
import { providerVariableNames } from '../../src/config/providerList';
import { MAIL_PROVIDER_NAMES } from '../../src/mail/providers/providerTypes';

// The credential variables .env.example names for Amazon SES (AWS's own; src/mail/providers/awsCredentials.ts).
const AWS_CREDENTIAL_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ROLE_ARN',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_SESSION_NAME',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
];

interface ComposeService {
  image?: string;
  environment?: Record<string, string | number>;
  env_file?: string | string[];
  entrypoint?: string[];
  volumes?: string[];
}

let settings: StackSettings;
let services: Record<string, ComposeService>;
let dockerfile: string;

beforeAll(() => {
  settings = loadStackSettings();
  const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, ComposeService>;
  };
  services = compose.services;
  dockerfile = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
});

function service(name: string): ComposeService {
  const found = services[name];
  if (found === undefined) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

function environment(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([key, value]) => [key, String(value)]),
  );
}

describe('docker-compose.yml and the native stack agree', () => {
  it('on image and binary versions (the native stack installs deploy/stack.env versions)', () => {
    expect(service('postgresql').image).toBe(`postgres:${settings.postgresqlVersion}`);
    expect(service('temporal').image).toBe(`temporalio/server:${settings.temporalServerVersion}`);
    expect(service('temporal-ui').image).toBe(`temporalio/ui:${settings.temporalUiVersion}`);
    for (const job of ['temporal-schema', 'temporal-namespace']) {
      expect(service(job).image).toBe(`temporalio/admin-tools:${settings.temporalAdminToolsVersion}`);
    }
    // The admin tools must be of the server's release: their schema files and CLI match it.
    expect(settings.temporalAdminToolsVersion.startsWith(`${settings.temporalServerVersion}-`)).toBe(true);
    expect(dockerfile).toContain(`ARG NODE_VERSION=${settings.nodeVersion}\n`);
  });

  it("on Temporal's databases, shards and namespace", () => {
    const temporal = environment('temporal');
    expect(temporal.DBNAME).toBe(settings.temporalDatabase);
    expect(temporal.VISIBILITY_DBNAME).toBe(settings.temporalVisibilityDatabase);
    expect(temporal.NUM_HISTORY_SHARDS).toBe(String(settings.historyShards));
    expect(environment('worker').TEMPORAL_NAMESPACE).toBe(settings.namespace);
    expect(environment('temporal-ui').TEMPORAL_DEFAULT_NAMESPACE).toBe(settings.namespace);
    // The one-shot jobs read their names from deploy/stack.env itself.
    for (const job of ['temporal-schema', 'temporal-namespace']) {
      expect(service(job).env_file).toBe('deploy/stack.env');
    }
  });

  it('on the search attributes: every one the workflows upsert is registered by both', () => {
    for (const [name, type] of Object.entries(devServerSearchAttributes())) {
      expect(settings.searchAttributes[name]).toBe(type);
    }
  });

  it("on the app's database and the worker's HTTP port", () => {
    // The URLs are interpolated by Compose (credentials from .env); their database part is fixed here. Each
    // job connects as its own role: db-roles as the admin that makes the two logins, migrate as the
    // migration login, the workers as the workers' login (least privilege).
    const app = new RegExp(`@postgresql:5432/${settings.appDatabase}$`);
    const rolesJob = environment('db-roles');
    for (const name of ['ADMIN_DATABASE_URL', 'MIGRATION_DATABASE_URL', 'DATABASE_URL']) {
      expect(rolesJob[name], name).toMatch(app);
    }
    expect(environment('migrate').MIGRATION_DATABASE_URL).toBe(rolesJob.MIGRATION_DATABASE_URL);
    expect(environment('migrate').DATABASE_URL).toBeUndefined();
    expect(environment('worker').DATABASE_URL).toBe(rolesJob.DATABASE_URL);
    expect(rolesJob.DATABASE_URL).not.toContain('POSTGRES_');
    expect(environment('worker').WORKER_HTTP_BIND_ADDRESS).toBe(`0.0.0.0:${settings.workerHttpPort}`);
    // The image binds loopback unless told otherwise (its HEALTHCHECK needs no more); compose names 0.0.0.0.
    expect(dockerfile).toContain(`WORKER_HTTP_BIND_ADDRESS=127.0.0.1:${settings.workerHttpPort}`);
    expect(dockerfile).toContain(`EXPOSE ${settings.workerHttpPort}\n`);
    expect(dockerfile).toContain(`http://127.0.0.1:${settings.workerHttpPort}/readyz`);
  });

  it('on how workers are configured: the same variable names, each documented in .env.example', () => {
    const native = Object.keys(
      stackWorkerEnvironment(
        {
          databaseUrl: 'postgres://u:p@h/d',
          temporalAddress: 'h:1',
          namespace: 'n',
          mailApiBaseUrl: 'http://h',
          mailApiKey: 'k',
        },
        'h:2',
      ),
    ).sort();
    const composed = Object.keys(environment('worker'));
    expect(native.filter((name) => !composed.includes(name))).toEqual([]);
    const documented = Object.keys(
      parseEnvFile(readFileSync(path.join(PROJECT_ROOT, '.env.example'), 'utf8')),
    );
    expect(native.filter((name) => !documented.includes(name))).toEqual([]);
    // Besides .env.example's keys: the names it documents by pattern or in its comments (failover's
    // <PROVIDER>_*, AWS's credentials), each read by the worker.
    const byPattern = [
      ...MAIL_PROVIDER_NAMES.flatMap((provider) => providerVariableNames(provider)),
      ...AWS_CREDENTIAL_VARIABLES,
    ];
    expect(composed.filter((name) => !documented.includes(name) && !byPattern.includes(name))).toEqual([]);
    // Each container gets only its own credentials: no other login's password, no env_file with all of .env.
    expect(service('worker').env_file).toBeUndefined();
    for (const secret of [
      'POSTGRES_PASSWORD',
      'MIGRATOR_DB_PASSWORD',
      'MIGRATION_DATABASE_URL',
      'ADMIN_DATABASE_URL',
    ]) {
      expect(composed).not.toContain(secret);
    }
    expect(JSON.stringify(environment('worker'))).not.toMatch(/POSTGRES_PASSWORD|MIGRATOR_DB_PASSWORD/);
    expect(JSON.stringify(environment('migrate'))).not.toMatch(/POSTGRES_PASSWORD|WORKER_DB_PASSWORD/);
    // With mTLS the native stack adds envconfig's TLS variables; they are documented too.
    const tlsNames = Object.keys(
      stackWorkerEnvironment(
        {
          databaseUrl: 'postgres://u:p@h/d',
          temporalAddress: 'h:1',
          namespace: 'n',
          mailApiBaseUrl: 'http://h',
          mailApiKey: 'k',
          tls: { caCertFile: 'a', clientCertFile: 'b', clientKeyFile: 'c', serverName: 'd' },
        },
        'h:2',
      ),
    );
    expect(tlsNames.filter((name) => !documented.includes(name))).toEqual([]);
  });

  it('on who holds which secret: the Temporal server its own login, the sandbox its own key', () => {
    // The server logs in as the login temporal-schema makes, never as the superuser of .env.
    expect(environment('temporal').POSTGRES_USER).toBe(environment('temporal-schema').TEMPORAL_DB_USER);
    expect(environment('temporal').POSTGRES_USER).not.toMatch(/POSTGRES_USER/);
    expect(environment('temporal').POSTGRES_PWD).toMatch(/^\$\{TEMPORAL_DB_PASSWORD:\?/);
    expect(JSON.stringify(environment('temporal'))).not.toMatch(/POSTGRES_PASSWORD/);
    // The sandbox records what it receives: it gets a key of its own, never the workers' MAIL_API_KEY.
    expect(environment('mail-sandbox').SANDBOX_API_KEY).toMatch(/^\$\{MAIL_SANDBOX_API_KEY:\?/);
    expect(JSON.stringify(environment('mail-sandbox'))).not.toMatch(/MAIL_API_KEY/);
    expect(environment('worker').MAIL_API_KEY).not.toMatch(/\$\{MAIL_API_KEY[:}]/);
  });

  it("on the names the one-shot jobs' scripts read: each comes from deploy/stack.env or the service", () => {
    const stackEnv = Object.keys(parseEnvFile(readFileSync(STACK_ENV_PATH, 'utf8')));
    const jobs = { 'temporal-schema': 'setup-postgres.sh', 'temporal-namespace': 'create-namespace.sh' };
    for (const [job, script] of Object.entries(jobs)) {
      expect(service(job).entrypoint).toEqual(['/bin/sh', `/stack/${script}`]);
      const text = readFileSync(path.join(PROJECT_ROOT, 'deploy', 'temporal', script), 'utf8');
      // Required variables are written ${NAME:?...} or ${NAME}; those with a default (${NAME:-x}) may be absent.
      const required = new Set(
        [...text.matchAll(/\$\{([A-Z][A-Z0-9_]*)(?::\?[^}]*)?\}/g)].map((match) => match[1] ?? ''),
      );
      const provided = [...stackEnv, ...Object.keys(environment(job))];
      expect([...required].filter((name) => !provided.includes(name))).toEqual([]);
    }
  });
});
