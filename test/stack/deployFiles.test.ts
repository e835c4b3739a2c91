// The deploy files are checked by their own tools: docker-compose.yml by `docker-compose config` (Debian's
// docker-compose; no Docker engine needed), the Prometheus alerts by `promtool check rules` and their unit
// tests by `promtool test rules`, deploy/kubernetes by kubecheck (dev/kubecheck: kustomize build, then each
// object decoded strictly into its Kubernetes type, offline). `scripts/setup.sh --deploy-checks` installs all.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../dev/stack/stackSettings';
import { parseAllDocuments } from 'yaml';
import { findKubecheck, findPromtool } from '../../dev/stack/stackTools';

const run = promisify(execFile);

describe('docker-compose.yml', () => {
  let project: string;

  beforeAll(async () => {
    // A copy with the .env a user makes from .env.example (`cp .env.example .env`): the compose file
    // needs it for its ${...} and the workers' env_file, and the checkout must not get one.
    project = await mkdtemp(path.join(tmpdir(), 'compose-check-'));
    for (const entry of ['docker-compose.yml', 'Dockerfile', 'deploy']) {
      await cp(path.join(PROJECT_ROOT, entry), path.join(project, entry), { recursive: true });
    }
    await cp(path.join(PROJECT_ROOT, '.env.example'), path.join(project, '.env'));
  });
  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it('is valid for docker-compose config, with the .env that .env.example makes', async () => {
    const { stdout } = await run('docker-compose', ['config'], { cwd: project });
    for (const name of [
      'postgresql',
      'temporal-schema',
      'temporal',
      'temporal-namespace',
      'temporal-ui',
      'db-roles',
      'migrate',
      'mail-sandbox',
      'worker',
    ]) {
      expect(stdout).toContain(`\n  ${name}:\n`);
    }
  });

  it('is valid with every profile (the webhook receiver, Prometheus and Grafana)', async () => {
    const { stdout } = await run(
      'docker-compose',
      ['--profile', 'webhooks', '--profile', 'monitoring', 'config'],
      { cwd: project },
    );
    for (const name of ['webhook-roles', 'webhooks', 'prometheus', 'grafana', 'worker']) {
      expect(stdout).toContain(`\n  ${name}:\n`);
    }
  });

  it('holds no secrets of its own: without POSTGRES_PASSWORD in .env it refuses to start', async () => {
    const env = await readFile(path.join(project, '.env'), 'utf8');
    await writeFile(path.join(project, '.env'), env.replace(/^POSTGRES_PASSWORD=.*$/m, 'POSTGRES_PASSWORD='));
    try {
      await expect(run('docker-compose', ['config'], { cwd: project })).rejects.toMatchObject({
        stderr: expect.stringContaining('set POSTGRES_PASSWORD in .env') as unknown,
      });
    } finally {
      await writeFile(path.join(project, '.env'), env);
    }
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  const promtool = (): string => {
    const found = findPromtool();
    if (found === null) throw new Error('promtool not found; run: bash scripts/setup.sh --deploy-checks');
    return found;
  };
  const rules = path.join(PROJECT_ROOT, 'deploy', 'prometheus');

  it('passes promtool check rules', async () => {
    const { stdout } = await run(promtool(), ['check', 'rules', path.join(rules, 'alerts.yml')]);
    // Every alert in the file is a rule promtool must accept, so the count comes from the file itself.
    const alerts = readFileSync(path.join(rules, 'alerts.yml'), 'utf8').match(/^\s*- alert:/gm) ?? [];
    expect(alerts.length).toBeGreaterThan(0);
    expect(stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('fires as its unit tests expect (promtool test rules)', async () => {
    const { stdout } = await run(promtool(), ['test', 'rules', 'alerts.test.yml'], { cwd: rules });
    expect(stdout).toContain('SUCCESS');
  });
});

describe('deploy/kubernetes', () => {
  const kubecheck = (): string => {
    const found = findKubecheck();
    if (found === null) throw new Error('kubecheck not found; run: bash scripts/setup.sh --deploy-checks');
    return found;
  };
  const kubernetes = path.join(PROJECT_ROOT, 'deploy', 'kubernetes');

  interface Built {
    kind: string;
    metadata: { name: string; labels?: Record<string, string> };
    spec?: Record<string, unknown>;
  }

  it('the example overlay builds and every object passes kubecheck', async () => {
    const { stdout } = await run(kubecheck(), ['-print', path.join(kubernetes, 'example')], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const objects = parseAllDocuments(stdout).map((document) => document.toJS() as Built);
    const kinds = objects.map((object) => `${object.kind}/${object.metadata.name}`);
    for (const expected of [
      'Deployment/order-mail-worker-2-4-0',
      'Deployment/order-mail-worker-2-5-0',
      'PodDisruptionBudget/order-mail-worker-2-4-0',
      'PodDisruptionBudget/order-mail-worker-2-5-0',
      'Deployment/order-mail-webhooks',
      'Service/order-mail-webhooks',
      'Job/order-mail-migrate',
      'CronJob/order-mail-prune',
      'PodMonitor/order-confirmation-mail',
      'PrometheusRule/order-confirmation-mail',
      'ConfigMap/order-confirmation-mail-dashboard',
    ]) {
      expect(kinds).toContain(expected);
    }
    // Two builds side by side: each Deployment selects only its own build's pods.
    const workers = objects.filter((object) => object.metadata.name.startsWith('order-mail-worker-2-'));
    const selectors = workers
      .filter((object) => object.kind === 'Deployment')
      .map(
        (object) =>
          (object.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
      );
    expect(selectors.map((labels) => labels['order-confirmation-mail/build-id'])).toEqual(['2.4.0', '2.5.0']);
    // Every runbook_url is on the overlay's base, none a repository path.
    const rule = objects.find((object) => object.kind === 'PrometheusRule')!;
    const urls = JSON.stringify(rule.spec).match(/"runbook_url":"[^"]*"/g) ?? [];
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) {
      expect(url).toMatch(/"runbook_url":"https:\/\/git\.example\.com\/[^"#]*operating\.md#[a-z0-9-]+"/);
    }
  });

  it('fails on a broken manifest: a misspelt field, a probe on a port the container lacks', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'kubecheck-'));
    try {
      await cp(kubernetes, copy, { recursive: true });
      const deployment = path.join(copy, 'worker', 'deployment.yaml');
      const text = await readFile(deployment, 'utf8');
      await writeFile(
        deployment,
        text.replace('terminationGracePeriodSeconds:', 'terminationGracePeriodSecond:'),
      );
      await expect(run(kubecheck(), [path.join(copy, 'example')])).rejects.toMatchObject({
        stderr: expect.stringMatching(
          /Deployment\/order-mail-worker-2-4-0: .*unknown field "terminationGracePeriodSecond"/,
        ) as unknown,
      });
      await writeFile(
        deployment,
        text.replace('httpGet: { path: /readyz, port: http }', 'httpGet: { path: /readyz, port: metrics }'),
      );
      await expect(run(kubecheck(), [path.join(copy, 'example')])).rejects.toMatchObject({
        stderr: expect.stringContaining(
          'a probe names port metrics, which the container does not have',
        ) as unknown,
      });
      // And the overlay's runbook base is required: without the component, the placeholder stays and fails.
      await writeFile(deployment, text);
      const overlay = path.join(copy, 'example', 'kustomization.yaml');
      await writeFile(overlay, (await readFile(overlay, 'utf8')).replace(/components:\n {2}- [^\n]*\n/, ''));
      await expect(run(kubecheck(), [path.join(copy, 'example')])).rejects.toMatchObject({
        stderr: expect.stringContaining('still holds RUNBOOK_BASE_URL') as unknown,
      });
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});
