// Every alert says where its runbook is (a section of docs/operating.md that exists) and names no task
// queue of its own: the queue is whatever TEMPORAL_TASK_QUEUE says, so it comes from the series' labels.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { anchorsOf } from '../docs/markdownLinks';

const ROOT = path.join(__dirname, '..', '..');
const rules = (
  parse(readFileSync(path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string; annotations: Record<string, string> }[] }[];
  }
).groups.flatMap((group) => group.rules);

it('every alert has a runbook_url at a section of docs/operating.md that exists', () => {
  const anchors = anchorsOf(readFileSync(path.join(ROOT, 'docs', 'operating.md'), 'utf8'));
  expect(rules.length).toBeGreaterThan(0);
  for (const rule of rules) {
    const url = rule.annotations.runbook_url ?? '';
    expect(url, rule.alert).toMatch(/^docs\/operating\.md#[a-z0-9-]+$/);
    expect(anchors.has(url.split('#')[1]!), `${rule.alert}: ${url}`).toBe(true);
  }
});

it('no alert names a task queue: it is a label of the series', () => {
  for (const rule of rules) expect(rule.expr, rule.alert).not.toMatch(/task_queue\s*=~?\s*"/);
});
