// Loaded into a worker process by NODE_OPTIONS=--import (test/workerPreparedStatements.test.ts): prints one
// stderr line per query of a pg pool, saying whether it was sent named, so a test sees what the process sent.
import { createRequire } from 'node:module';
import process from 'node:process';

const pg = createRequire(import.meta.url)('pg');
const query = pg.Pool.prototype.query;
pg.Pool.prototype.query = function (...args) {
  const [first, values] = args;
  const kind =
    typeof first === 'object' && first !== null && 'name' in first
      ? 'named'
      : Array.isArray(values) && values.length > 0
        ? 'unnamed'
        : 'simple';
  process.stderr.write(`pg-query-spy ${kind}\n`);
  return query.apply(this, args);
};
