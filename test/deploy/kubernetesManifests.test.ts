// deploy/kubernetes/base's PrometheusRule and dashboard ConfigMap are made from deploy/'s alert rules and
// dashboard (npm run deploy:manifests): they must not drift apart. The manifests themselves are validated by
// kubecheck in the stack suite (test/stack/deployFiles.test.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, parseDocument } from 'yaml';
import { GENERATED, KUBERNETES_BASE, RUNBOOK_BASE_PLACEHOLDER } from '../../dev/devtools/kubernetesManifests';

const ROOT = path.join(__dirname, '..', '..');

it.each(Object.keys(GENERATED))(
  'deploy/kubernetes/base/%s is what npm run deploy:manifests makes',
  (file) => {
    expect(readFileSync(path.join(KUBERNETES_BASE, file), 'utf8')).toBe(GENERATED[file]!());
  },
);

it('the dashboard ConfigMap holds deploy/grafana/order-confirmation-mail.json byte for byte', () => {
  const configMap = parse(readFileSync(path.join(KUBERNETES_BASE, 'grafana-dashboard.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  const json = readFileSync(path.join(ROOT, 'deploy', 'grafana', 'order-confirmation-mail.json'), 'utf8');
  expect(configMap.data['order-confirmation-mail.json']).toBe(json);
});

it('the PrometheusRule holds every alert of alerts.yml, its runbook_url on the configurable base', () => {
  type Groups = { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] };
  const alerts = (
    parse(readFileSync(path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as Groups
  ).groups.flatMap((group) => group.rules);
  const rule = parseDocument(
    readFileSync(path.join(KUBERNETES_BASE, 'prometheusrule.yaml'), 'utf8'),
  ).toJS() as {
    spec: Groups;
  };
  const rules = rule.spec.groups.flatMap((group) => group.rules);
  expect(rules.map((r) => r.alert)).toEqual(alerts.map((a) => a.alert));
  for (const [index, alert] of alerts.entries()) {
    const section = alert.annotations.runbook_url!.split('#')[1];
    expect(rules[index]!.annotations.runbook_url).toBe(`${RUNBOOK_BASE_PLACEHOLDER}#${section}`);
  }
});

it("the worker's stop grace outlasts WORKER_SHUTDOWN_GRACE_MS by a margin", () => {
  const deployment = parse(
    readFileSync(path.join(ROOT, 'deploy', 'kubernetes', 'worker', 'deployment.yaml'), 'utf8'),
  ) as {
    spec: { template: { spec: { terminationGracePeriodSeconds: number } } };
  };
  const grace = Number(
    /^WORKER_SHUTDOWN_GRACE_MS=(\d+)$/m.exec(
      readFileSync(path.join(KUBERNETES_BASE, 'worker.env'), 'utf8'),
    )?.[1],
  );
  expect(grace).toBeGreaterThan(0);
  expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
    grace / 1000 + 10,
  );
});

it('the probes ask the paths the worker and the receiver serve, on the ports their settings bind', () => {
  interface Container {
    ports: { name: string; containerPort: number }[];
    startupProbe?: { httpGet: { path: string; port: string } };
    livenessProbe: { httpGet: { path: string; port: string } };
    readinessProbe: { httpGet: { path: string; port: string } };
  }
  const containerOf = (file: string): Container =>
    (
      parse(readFileSync(path.join(ROOT, 'deploy', 'kubernetes', file), 'utf8').split('\n---\n')[0]!) as {
        spec: { template: { spec: { containers: Container[] } } };
      }
    ).spec.template.spec.containers[0]!;
  const portOf = (envFile: string, name: string): number =>
    Number(
      new RegExp(`^${name}=0\\.0\\.0\\.0:(\\d+)$`, 'm').exec(
        readFileSync(path.join(KUBERNETES_BASE, envFile), 'utf8'),
      )?.[1],
    );

  // src/metrics/workerHttpServer.ts: /healthz (alive, also while waiting), /readyz (polling, dependencies up).
  const worker = containerOf('worker/deployment.yaml');
  expect(worker.ports).toEqual([
    { name: 'http', containerPort: portOf('worker.env', 'WORKER_HTTP_BIND_ADDRESS') },
  ]);
  expect(worker.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  expect(worker.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
  expect(worker.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
  // src/webhooks/webhookServer.ts serves both on its own port; its metrics on another.
  const receiver = containerOf('base/webhooks.yaml');
  expect(receiver.ports).toEqual([
    { name: 'webhooks', containerPort: portOf('webhooks.env', 'WEBHOOK_BIND_ADDRESS') },
    { name: 'metrics', containerPort: portOf('webhooks.env', 'WEBHOOK_METRICS_BIND_ADDRESS') },
  ]);
  expect(receiver.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'webhooks' });
  expect(receiver.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'webhooks' });
});
