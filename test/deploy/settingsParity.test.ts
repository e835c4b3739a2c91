// Every setting .env.example documents for the worker reaches the worker in docker-compose.yml and in the
// Kubernetes Deployment (deploy/kubernetes), and the receiver's reach the receiver: a setting added to the
// config and documented, but forgotten in a deployment, would silently be its default there.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseEnvFile } from '../../dev/stack/stackSettings';
import { providerVariableNames } from '../../src/config/providerList';
import { MAIL_PROVIDER_NAMES } from '../../src/mail/providers/providerTypes';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const documented = Object.keys(parseEnvFile(read('.env.example')));

const RECEIVER = /^(WEBHOOK_|SENDGRID_WEBHOOK_|MAILGUN_WEBHOOK_|SES_SNS_|SNS_)/;
// .env.example's names that no worker reads, each with the reason.
const NOT_THE_WORKERS: Record<string, string> = {
  MIGRATION_DATABASE_URL: 'the migrate job only (a role the workers must never hold)',
  RECONCILE_INTERVAL_MS: 'read by npm run setup, which makes the Schedule',
  TEMPORAL_UI_URL: 'the ops CLI only',
  OPS_DATABASE_URL: "an operator's own login, for the ops CLI",
  POSTGRES_USER: 'docker compose only: the stack Postgres superuser',
  POSTGRES_PASSWORD: 'docker compose only: the stack Postgres superuser',
  TEMPORAL_DB_PASSWORD: "docker compose only: the Temporal server's login",
  MIGRATOR_DB_PASSWORD: "docker compose only: goes into the migrate job's URL",
  WORKER_DB_PASSWORD: "docker compose only: goes into the worker's DATABASE_URL",
  WEBHOOK_DB_PASSWORD: "docker compose only: goes into the receiver's URL",
  GRAFANA_ADMIN_PASSWORD: 'docker compose only: the monitoring profile',
  MAIL_API_BASE_URL_IN_COMPOSE: "docker compose only: becomes the worker's MAIL_API_BASE_URL",
  MAIL_API_KEY_IN_COMPOSE: "docker compose only: becomes the worker's MAIL_API_KEY",
  MAIL_SANDBOX_API_KEY: "docker compose only: the sandbox's own key",
};
// Not keys of .env.example but documented there and read by the worker: failover's per-provider keys and
// base URLs (SES has neither key nor base URL of its own but AWS's credentials), and AWS's credentials.
const PER_PROVIDER = MAIL_PROVIDER_NAMES.flatMap((provider) =>
  providerVariableNames(provider).filter(
    (name) => /_API_KEY$|_API_BASE_URL$/.test(name) && !name.startsWith('SES_API_KEY'),
  ),
);
const AWS_CREDENTIALS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'];

const workerSettings = documented.filter((name) => !(name in NOT_THE_WORKERS) && !RECEIVER.test(name));
const receiverSettings = documented.filter((name) => !(name in NOT_THE_WORKERS) && RECEIVER.test(name));

interface Container {
  env?: { name: string }[];
  envFrom?: { configMapRef?: { name: string } }[];
}
function kubernetesNames(manifest: string, envFiles: Record<string, string>): string[] {
  const names: string[] = [];
  for (const document of parseAllDocuments(read(manifest))) {
    const object = document.toJS() as { spec?: { template?: { spec?: { containers?: Container[] } } } };
    for (const container of object.spec?.template?.spec?.containers ?? []) {
      names.push(...(container.env ?? []).map((entry) => entry.name));
      for (const from of container.envFrom ?? []) {
        const file = envFiles[from.configMapRef?.name ?? ''];
        if (file !== undefined) names.push(...Object.keys(parseEnvFile(read(file))));
      }
    }
  }
  return names;
}

function composeNames(service: string): string[] {
  const compose = parse(read('docker-compose.yml')) as {
    services: Record<string, { environment?: Record<string, unknown> }>;
  };
  return Object.keys(compose.services[service]?.environment ?? {});
}

const missing = (wanted: string[], present: string[]): string[] =>
  wanted.filter((name) => !present.includes(name));

describe('every documented setting reaches its process', () => {
  it('finds settings to check (the exclusions name real entries or ones on their way out)', () => {
    expect(workerSettings.length).toBeGreaterThan(60);
    expect(receiverSettings.length).toBeGreaterThan(8);
    expect(PER_PROVIDER).toContain('MAILGUN_API_KEY');
  });

  it("docker-compose.yml's worker gets every worker setting", () => {
    expect(missing([...workerSettings, ...PER_PROVIDER, ...AWS_CREDENTIALS], composeNames('worker'))).toEqual(
      [],
    );
  });

  it("docker-compose.yml's webhooks service gets every receiver setting", () => {
    expect(missing(receiverSettings, composeNames('webhooks'))).toEqual([]);
  });

  it('the Kubernetes worker Deployment gets every worker setting (its env and its ConfigMap)', () => {
    const names = kubernetesNames('deploy/kubernetes/worker/deployment.yaml', {
      'order-mail-worker-settings': 'deploy/kubernetes/base/worker.env',
    });
    const keysOnly = PER_PROVIDER.filter((name) => name.endsWith('_API_KEY'));
    expect(missing([...workerSettings, ...keysOnly, ...AWS_CREDENTIALS], names)).toEqual([]);
  });

  it('the Kubernetes webhooks Deployment gets every receiver setting', () => {
    const names = kubernetesNames('deploy/kubernetes/base/webhooks.yaml', {
      'order-mail-webhooks-settings': 'deploy/kubernetes/base/webhooks.env',
    });
    expect(missing(receiverSettings, names)).toEqual([]);
  });
});
