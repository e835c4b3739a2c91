// The deploy files are checked by their own tools: docker-compose.yml by `docker-compose config` (Debian's
// docker-compose; no Docker engine needed), the Prometheus alerts by `promtool check rules` and their unit
// tests by `promtool test rules`. `scripts/setup.sh --deploy-checks` installs both tools.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../dev/stack/stackSettings';
import { findPromtool } from '../../dev/stack/stackTools';

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
