// deploy/temporal/dynamicconfig.yaml is production's (compose mounts it): no setting Temporal documents as
// for development only. The native stack adds its one test flag on top (dev/stack/temporalServer.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';

it('holds no development-only dynamic config', () => {
  const file = path.join(__dirname, '..', '..', 'deploy', 'temporal', 'dynamicconfig.yaml');
  const keys = Object.keys(parse(readFileSync(file, 'utf8')) as Record<string, unknown>);
  expect(keys).not.toContain('system.forceSearchAttributesCacheRefreshOnRead');
  expect(keys).toContain('limit.maxIDLength');
});
