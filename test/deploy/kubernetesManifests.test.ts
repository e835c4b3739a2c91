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
