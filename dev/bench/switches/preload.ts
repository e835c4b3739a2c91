// Loaded before src/worker.ts in the bench's switch variants (`node --import tsx --import <this> src/worker.ts`):
// takes the BENCH_SKIP_ switches out of the environment and applies them, then the product's worker starts
// as deployed. Never part of the product (docs/benchmarks.md, "What each extra costs").
import pg from 'pg';
import { skipQuery, takeSkips } from './skips';

const skips = takeSkips(process.env);
if (skips.logLines) process.env.LOG_LEVEL = 'warn';
if (skips.preparedStatements) process.env.PG_PREPARED_STATEMENTS = 'false';
if (skips.searchAttributesBundle !== null) process.env.WORKFLOW_BUNDLE_PATH = skips.searchAttributesBundle;
if (skips.fence || skips.audit || skips.healthSuccess) {
  // Every statement of the worker goes through its one pool's query, named or not.
  // Called with each pool as `this` below, never unbound.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const query = pg.Pool.prototype.query as (...args: unknown[]) => unknown;
  pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
    const instead = skipQuery(args, skips);
    return 'answer' in instead ? Promise.resolve(instead.answer) : query.apply(this, instead.args);
  } as typeof pg.Pool.prototype.query;
}
