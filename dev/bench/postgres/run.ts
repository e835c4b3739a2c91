// `npm run bench:postgres`: our Postgres as it grows. Fills order_mail_log to each size (default 0, 1 and 10
// million rows; order_mail_attempts to three times that) with a realistic mix of states (fill.ts), then
// measures the claim, fence and record of new orders, the reconciliation sweep's queries and the stuck gauge
// at each size (measure.ts), against the goal: within 1.5× of the empty table's figures. Heavy: on a shared
// machine, run it alone. `--data-dir DIR` keeps the filled cluster, so a second run (after an index change,
// say) measures the same rows again without filling them.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, escapeIdentifier } from 'pg';
import { migrate } from '../../../src/db/migrator';
import { createDatabase, type Database } from '../../../src/db/pool';
import { startEmbeddedPostgres } from '../../devtools/embeddedPostgres';
import { summarizeLatencies } from '../latency';
import { loadAverage, machineFacts, type MachineFacts } from '../machine';
import { fillTo, NEWEST_FILLED_ID, SECONDS_PER_ORDER } from './fill';
import { describeSize, measureRound, STEPS, type SizeFacts, type Step, type StepFigures } from './measure';

export const GROWTH_GOAL = 1.5;

export interface GrowthReport {
  command: string;
  machine: MachineFacts;
  postgres: string;
  samples: number;
  repeats: number;
  rounds: number;
  sizes: (SizeFacts & { target: number; fillSeconds: number; steps: StepFigures[] })[];
  /** A kept cluster (--data-dir) measured later: how far its newest orders were moved to now (0: not). */
  newestMovedSeconds?: number;
}

/** The newest orders a kept cluster moves up to now: more than the sweep's window (its overlap and grace). */
const NEWEST_HOURS = 2;

const USAGE = `npm run bench:postgres -- [--sizes 0,1000000,10000000] [--samples 2000] [--repeats 20]
  [--rounds 4] [--prune-older-than 30] [--data-dir DIR] [--json PATH]
Two databases on one server: one filled to each size in turn, one left empty; at each size the two are
measured in alternating rounds, so every ratio compares figures taken minutes apart at most.
Without DATABASE_URL it runs an embedded PostgreSQL 17 (fsync=off); --data-dir keeps its data for the next run.
With DATABASE_URL (a user that may create databases) it creates, or reuses, the two databases there.`;

const FILLED = 'order_mail_growth_filled';
const EMPTY = 'order_mail_growth_empty';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '0,1000000,10000000' },
      samples: { type: 'string', default: '2000' },
      repeats: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '4' },
      'prune-older-than': { type: 'string', default: '30' },
      'data-dir': { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const sizes = values.sizes.split(',').map(Number);
  if (
    sizes.some((size) => !Number.isInteger(size) || size < 0) ||
    sizes.some((size, i) => i > 0 && size < sizes[i - 1]!)
  ) {
    throw new Error(`--sizes must be whole numbers in ascending order\n${USAGE}`);
  }
  const samples = Number(values.samples);
  const repeats = Number(values.repeats);
  const rounds = Number(values.rounds);
  const machine = machineFacts();
  const began = performance.now();
  const log = (message: string): void => {
    process.stderr.write(
      `[bench:postgres ${((performance.now() - began) / 1000).toFixed(0).padStart(5)}s] ${message}\n`,
    );
  };

  let serverUrl = process.env.DATABASE_URL ?? '';
  let stop = async (): Promise<void> => undefined;
  let postgres = 'DATABASE_URL';
  if (serverUrl === '') {
    const dataDir = values['data-dir'] === undefined ? undefined : path.resolve(values['data-dir']);
    if (dataDir !== undefined && !existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    const server = await startEmbeddedPostgres({ dataDir, persistent: dataDir !== undefined });
    stop = () => server.stop();
    serverUrl = server.connectionString;
    postgres = `embedded PostgreSQL 17 (fsync=off), same machine${dataDir === undefined ? '' : `, data in ${dataDir}`}`;
  }
  const filledUrl = await ensureDatabase(serverUrl, FILLED);
  // The empty side starts empty on every run (measured orders accumulate in it otherwise).
  const emptyUrl = await ensureDatabase(serverUrl, EMPTY, { fresh: true });
  // The fill's statements run for minutes; the measured ones use the product's own pool settings.
  const admin = createDatabase({
    connectionString: filledUrl,
    applicationName: 'bench:postgres fill',
    maxConnections: 2,
    statementTimeoutMs: 3_600_000,
  });
  const emptyAdmin = createDatabase({ connectionString: emptyUrl, applicationName: 'bench:postgres admin' });
  const filled = createDatabase({ connectionString: filledUrl, applicationName: 'bench:postgres measured' });
  const empty = createDatabase({ connectionString: emptyUrl, applicationName: 'bench:postgres measured' });
  const report: GrowthReport = {
    command: `npm run bench:postgres -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    postgres,
    samples,
    repeats,
    rounds,
    sizes: [],
  };
  try {
    for (const url of [filledUrl, emptyUrl]) {
      const migrated = await migrate(url);
      log(`migrations: ${migrated.applied.length} applied, ${migrated.alreadyApplied.length} already there`);
    }
    // New orders (the measured ones) get ids above the filled history.
    await admin.query(
      `SELECT setval(pg_get_serial_sequence('orders', 'id'), GREATEST($1::bigint, (SELECT max(id) FROM orders)))`,
      [NEWEST_FILLED_ID],
    );
    // Stuck-claim orders an earlier version of this bench left behind (confirmed, no row) would be found by
    // every sweep batch measured here.
    await admin.query(
      `DELETE FROM orders o WHERE o.customer_email = 'stuck@example.com'
          AND NOT EXISTS (SELECT 1 FROM order_mail_log l WHERE l.order_id = o.id)`,
    );
    const anchor = await timelineAnchor(admin);
    report.newestMovedSeconds = await bringNewestToNow(admin, anchor);
    if (report.newestMovedSeconds > 0) {
      log(
        `kept cluster: its newest ${NEWEST_HOURS} h of orders moved ${report.newestMovedSeconds.toFixed(0)} s forward, to now`,
      );
    }
    for (const target of sizes) {
      const fillStarted = performance.now();
      log(`filling to ${target.toLocaleString('en')} orders`);
      await fillTo(admin, target, anchor, (done) => log(`  ${done.toLocaleString('en')} filled`));
      const fillSeconds = (performance.now() - fillStarted) / 1000;
      log(
        `measuring at ${target.toLocaleString('en')}: ${rounds} rounds of ${Math.ceil(samples / rounds)} orders each side`,
      );
      const timings = { filled: emptyTimings(), empty: emptyTimings() };
      let plans: Partial<Record<Step, string[]>> = {};
      for (let round = 0; round < rounds; round++) {
        // Alternating which side goes first, so a neighbour's load that rises or falls hits both alike.
        const sides = round % 2 === 0 ? (['empty', 'filled'] as const) : (['filled', 'empty'] as const);
        for (const side of sides) {
          const result = await measureRound(
            side === 'filled' ? filled : empty,
            side === 'filled' ? admin : emptyAdmin,
            {
              samples: Math.ceil(samples / rounds),
              repeats: Math.ceil(repeats / rounds),
              explain: side === 'filled' && round === rounds - 1,
            },
          );
          for (const step of STEPS) timings[side][step].push(...result.timings[step]);
          if (side === 'filled' && round === rounds - 1) plans = result.plans;
        }
      }
      const steps: StepFigures[] = STEPS.map((step) => ({
        step,
        latency: summarizeLatencies(timings.filled[step]),
        empty: summarizeLatencies(timings.empty[step]),
        plans: plans[step] ?? [],
      }));
      const facts = await describeSize(admin, Number(values['prune-older-than']));
      report.sizes.push({ target, fillSeconds, steps, ...facts });
      log(
        steps
          .map(
            (step) =>
              `${step.step} p50 ${step.latency.p50Ms} (${step.empty.p50Ms}) ms, p99 ${step.latency.p99Ms} (${step.empty.p99Ms}) ms`,
          )
          .join('; '),
      );
    }
  } finally {
    machine.loadAverageAtEnd = loadAverage();
    for (const db of [filled, empty, emptyAdmin, admin]) await db.close();
    await stop();
  }
  console.log(renderGrowth(report));
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(report, null, 2) + '\n');
}

function emptyTimings(): Record<Step, number[]> {
  return Object.fromEntries(STEPS.map((step) => [step, [] as number[]])) as Record<Step, number[]>;
}

/** The URL of `name` on the server of `serverUrl`, created if it is not there (dropped first if `fresh`). */
async function ensureDatabase(serverUrl: string, name: string, options = { fresh: false }): Promise<string> {
  const client = new Client({ connectionString: serverUrl, application_name: 'bench:postgres setup' });
  await client.connect();
  try {
    if (options.fresh) await client.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`);
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if ((rowCount ?? 0) === 0) await client.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * "Now" of the filled timeline: kept in the database, so a fill continued by a later run (--data-dir) goes on
 * with the same timeline; the first run sets it.
 */
async function timelineAnchor(admin: Database): Promise<Date> {
  await admin.query(`CREATE TABLE IF NOT EXISTS bench_fill_timeline (anchor TIMESTAMPTZ NOT NULL)`);
  await admin.query(
    `INSERT INTO bench_fill_timeline (anchor) SELECT now() WHERE NOT EXISTS (SELECT 1 FROM bench_fill_timeline)`,
  );
  const { rows } = await admin.query<{ anchor: Date }>(`SELECT anchor FROM bench_fill_timeline`);
  return rows[0]!.anchor;
}

/**
 * A cluster kept with --data-dir and measured hours after its fill would have no orders in the sweep's
 * window (the last hour or so before now), unlike a live shop. So its newest NEWEST_HOURS of filled orders,
 * with their log rows and attempts, are moved forward to end at now (a gap in the history behind them,
 * which nothing measured reads). Returns the seconds moved this time; idempotent within five minutes.
 */
async function bringNewestToNow(admin: Database, anchor: Date): Promise<number> {
  await admin.query(`CREATE TABLE IF NOT EXISTS bench_fill_moved (seconds DOUBLE PRECISION NOT NULL)`);
  await admin.query(
    `INSERT INTO bench_fill_moved SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM bench_fill_moved)`,
  );
  const { rows } = await admin.query<{ due: number; filled: boolean }>(
    `SELECT extract(epoch FROM now() - $1::timestamptz)::float8 - (SELECT seconds FROM bench_fill_moved) AS due,
            EXISTS (SELECT 1 FROM orders WHERE id <= $2) AS filled`,
    [anchor, NEWEST_FILLED_ID],
  );
  const { due, filled } = rows[0]!;
  if (!filled || due < 300) return 0;
  const oldestMovedId = NEWEST_FILLED_ID - Math.ceil((NEWEST_HOURS * 3600) / SECONDS_PER_ORDER);
  const by = `make_interval(secs => $3::double precision)`;
  const range = [oldestMovedId, NEWEST_FILLED_ID, due];
  await admin.transaction(async (client) => {
    await client.query(
      `UPDATE orders SET ordered_at = ordered_at + ${by}, confirmed_at = confirmed_at + ${by}
        WHERE id > $1 AND id <= $2`,
      range,
    );
    await client.query(
      `UPDATE order_mail_log SET claim_issued_at = claim_issued_at + ${by}, claimed_at = claimed_at + ${by},
              dispatched_at = dispatched_at + ${by}, created_at = created_at + ${by}, updated_at = updated_at + ${by}
        WHERE order_id > $1 AND order_id <= $2`,
      range,
    );
    // The attempts are an append-only audit (migration 0010); moving a synthetic timeline is not a change to
    // what happened, so the trigger is off for this transaction only (DDL rolls back with it).
    await client.query('ALTER TABLE order_mail_attempts DISABLE TRIGGER order_mail_attempts_append_only');
    await client.query(
      `UPDATE order_mail_attempts SET claimed_at = claimed_at + ${by}, dispatched_at = dispatched_at + ${by},
              finished_at = finished_at + ${by}
        WHERE order_id > $1 AND order_id <= $2`,
      range,
    );
    await client.query('ALTER TABLE order_mail_attempts ENABLE TRIGGER order_mail_attempts_append_only');
    await client.query(`UPDATE bench_fill_moved SET seconds = seconds + $1`, [due]);
  });
  for (const table of ['orders', 'order_mail_log', 'order_mail_attempts'])
    await admin.query(`ANALYZE ${table}`);
  return due;
}

export function renderGrowth(report: GrowthReport): string {
  const lines = [
    `Machine: ${report.machine.cpuModel}, ${report.machine.cores} cores; load average ${report.machine.loadAverageAtStart.join(' / ')} at the start, ${report.machine.loadAverageAtEnd?.join(' / ') ?? '?'} at the end`,
    `Date: ${report.machine.date}; ${report.postgres}${report.newestMovedSeconds ? `; kept cluster, its newest ${NEWEST_HOURS} h of orders moved ${report.newestMovedSeconds.toFixed(0)} s forward to now` : ''}; per size ${report.samples} orders claimed, fenced and recorded and ${report.repeats} sweeps on each database, in ${report.rounds} alternating rounds`,
    '',
    '| log rows | attempt rows | step | p50 ms | p99 ms | empty p50 ms | empty p99 ms | p50 / empty | p99 / empty | within 1.5× |',
    '| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const size of report.sizes) {
    for (const step of size.steps) {
      const ratio = (value: number, reference: number) => (reference > 0 ? value / reference : null);
      const p50 = ratio(step.latency.p50Ms, step.empty.p50Ms);
      const p99 = ratio(step.latency.p99Ms, step.empty.p99Ms);
      const within = p50 !== null && p99 !== null && p50 <= GROWTH_GOAL && p99 <= GROWTH_GOAL;
      lines.push(
        `| ${size.logRows.toLocaleString('en')} | ${size.attemptRows.toLocaleString('en')} | ${step.step} | ` +
          `${step.latency.p50Ms.toFixed(2)} | ${step.latency.p99Ms.toFixed(2)} | ${step.empty.p50Ms.toFixed(2)} | ` +
          `${step.empty.p99Ms.toFixed(2)} | ${p50?.toFixed(2) ?? '-'} | ${p99?.toFixed(2) ?? '-'} | ${within ? 'yes' : '**no**'} |`,
      );
    }
  }
  lines.push('');
  for (const size of report.sizes) {
    lines.push(
      `- ${size.logRows.toLocaleString('en')} log rows: tables ${Object.entries(size.tableMiB)
        .map(([name, mib]) => `${name} ${mib.toFixed(0)} MiB`)
        .join(', ')}; ${size.ordersInLookback.toLocaleString('en')} orders in the sweep's look-back; ` +
        `filled in ${size.fillSeconds.toFixed(0)} s; prune --older-than ${size.prune.olderThanDays}d (dry run): ` +
        `${size.prune.logRowsExamined.toLocaleString('en')} log rows looked at, ${size.prune.attemptsDeletable.toLocaleString('en')} attempts deletable, ${size.prune.seconds.toFixed(1)} s`,
    );
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
