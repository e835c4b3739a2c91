// The two Kubernetes manifests made from files in deploy/ (kustomize reads nothing outside its own folder):
// the PrometheusRule from deploy/prometheus/alerts.yml, and the Grafana dashboard's ConfigMap from
// deploy/grafana/. `npm run deploy:manifests` writes them; test/deploy/kubernetesManifests.test.ts fails when
// the files in deploy/kubernetes/base differ from what this makes.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = path.join(__dirname, '..', '..');
export const KUBERNETES_BASE = path.join(ROOT, 'deploy', 'kubernetes', 'base');
const ALERTS = path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml');
const DASHBOARD = path.join(ROOT, 'deploy', 'grafana', 'order-confirmation-mail.json');

// Replaced by the kustomization with runbooks.yaml's baseUrl (everything before the '#').
export const RUNBOOK_BASE_PLACEHOLDER = 'RUNBOOK_BASE_URL';

const HEADER = (source: string): string =>
  `# Generated from ${source} by npm run deploy:manifests; edit that file, not this one.\n`;

interface AlertRule {
  alert?: string;
  annotations?: Record<string, string>;
}

/** alerts.yml as a PrometheusRule; each runbook_url `docs/operating.md#x` becomes `RUNBOOK_BASE_URL#x`. */
export function prometheusRuleManifest(alertsText = readFileSync(ALERTS, 'utf8')): string {
  const alerts = parse(alertsText) as { groups: { name: string; rules: AlertRule[] }[] };
  for (const rule of alerts.groups.flatMap((group) => group.rules)) {
    const url = rule.annotations?.runbook_url;
    if (url === undefined) continue;
    const section = /^docs\/operating\.md#([a-z0-9-]+)$/.exec(url)?.[1];
    if (section === undefined)
      throw new Error(`${rule.alert}: runbook_url ${url} is not a docs/operating.md section`);
    rule.annotations!.runbook_url = `${RUNBOOK_BASE_PLACEHOLDER}#${section}`;
  }
  const manifest = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'order-confirmation-mail' },
    spec: alerts,
  };
  return HEADER('deploy/prometheus/alerts.yml') + stringify(manifest, { lineWidth: 0 });
}

/** The dashboard's JSON, byte for byte, in a ConfigMap that Grafana's dashboard sidecar picks up by its label. */
export function dashboardConfigMapManifest(dashboardText = readFileSync(DASHBOARD, 'utf8')): string {
  const manifest = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'order-confirmation-mail-dashboard', labels: { grafana_dashboard: '1' } },
    data: { [path.basename(DASHBOARD)]: dashboardText },
  };
  return HEADER('deploy/grafana/order-confirmation-mail.json') + stringify(manifest, { lineWidth: 0 });
}

export const GENERATED: Record<string, () => string> = {
  'prometheusrule.yaml': () => prometheusRuleManifest(),
  'grafana-dashboard.yaml': () => dashboardConfigMapManifest(),
};

if (require.main === module) {
  for (const [file, make] of Object.entries(GENERATED)) {
    writeFileSync(path.join(KUBERNETES_BASE, file), make());
    console.log(`wrote deploy/kubernetes/base/${file}`);
  }
}
