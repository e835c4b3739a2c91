// .env.example must list every variable the worker reads, with its default, so an operator sees them all in one
// place.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.join(__dirname, '..', '..');

it('.env.example lists every variable loadConfig reads', () => {
  // loadConfig.ts and the modules it hands a part of the environment to with its reader.
  const source = ['src/config/loadConfig.ts', 'src/config/tracingSettings.ts']
    .map((file) => readFileSync(path.join(root, file), 'utf8'))
    .join('\n');
  const read = new Set(
    [...source.matchAll(/read\.\w+(?:<[^>]*>)?\(\s*'([A-Z0-9_]+)'/g)].flatMap((match) => match[1] ?? []),
  );
  const listed = new Set(
    readFileSync(path.join(root, '.env.example'), 'utf8')
      .split('\n')
      .flatMap((line) => /^([A-Z0-9_]+)=/.exec(line)?.[1] ?? []),
  );
  expect(read.size).toBeGreaterThan(20);
  expect([...read].filter((name) => !listed.has(name))).toEqual([]);
});
