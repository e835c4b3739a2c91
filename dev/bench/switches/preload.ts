// Loaded before src/worker.ts in the bench's switch variants (`node --import tsx --import <this> src/worker.ts`):
// takes the BENCH_SKIP_ switches out of the environment and applies them, then the product's worker starts
// as deployed. Never part of the product (docs/benchmarks.md, "What each extra costs").
import pg from 'pg';
import { preparedName, skipStatement, takeSkips } from './skips';

const skips = takeSkips(process.env);
if (skips.logLines) process.env.LOG_LEVEL = 'warn';
if (skips.searchAttributesBundle !== null) process.env.WORKFLOW_BUNDLE_PATH = skips.searchAttributesBundle;
if (skips.fence || skips.audit || skips.healthSuccess || skips.statementParse) {
  // Every statement of the worker goes through its one pool's query(text, params).
  // Called with each pool as `this` below, never unbound.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const query = pg.Pool.prototype.query as (...args: unknown[]) => unknown;
  pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
    const [text, ...rest] = args;
    if (typeof text !== 'string') return query.apply(this, args);
    const instead = skipStatement(text, skips);
    if ('answer' in instead) return Promise.resolve(instead.answer);
    const [values, ...others] = rest;
    const kept =
      instead.params !== undefined && Array.isArray(values) ? values.slice(0, instead.params) : values;
    if (skips.statementParse && Array.isArray(kept))
      return query.apply(this, [
        { name: preparedName(instead.text), text: instead.text, values: kept },
        ...others,
      ]);
    return query.apply(this, [instead.text, kept, ...others]);
  } as typeof pg.Pool.prototype.query;
}
