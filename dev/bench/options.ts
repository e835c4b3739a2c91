// Command-line flags of `npm run bench`. Two profiles: the full one (a few minutes, the figures in
// docs/benchmarks.md) and --short (under a minute, CI's smoke test: everything runs, nothing is judged).
import { parseArgs } from 'node:util';
import { ORDER_PATHS, type OrderPath } from './cost/orderPaths';
import { SWITCH_VARIANTS } from './switches/skips';

export const VARIANT_NAMES = [
  'floor',
  'floor-local',
  'empty',
  'card',
  'product',
  'plain',
  // The product with one extra left out (or one setting off) each (dev/bench/switches): only when named in --variants.
  'product-nofence',
  'product-noaudit',
  'product-noattrs',
  'product-nolog',
  'product-nohealthok',
  'product-unprepared',
  // 2.0.0's own worker on a database of its own (dev/bench/release): only when named in --variants.
  'release-2.0',
] as const;
const ON_REQUEST_ONLY: readonly string[] = [...SWITCH_VARIANTS, 'release-2.0'];
export type VariantName = (typeof VARIANT_NAMES)[number];
export const SERVER_NAMES = ['dev', 'stack'] as const;
/** dev: the dev server (or TEMPORAL_ADDRESS); stack: the Temporal server on Postgres of `npm run stack`. */
export type ServerName = (typeof SERVER_NAMES)[number];

export interface BenchOptions {
  profile: 'full' | 'short';
  /** Closed loop: concurrent starters (Temporal) or loops (plain). */
  concurrency: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Closed loop with one worker: the variants run this many times, interleaved, for paired ratios. */
  rounds: number;
  workerCounts: number[];
  variants: VariantName[];
  /** The Temporal servers every Temporal variant runs against, in the same run (the plain loop needs none). */
  servers: ServerName[];
  /**
   * The paths whose cost is recorded, one order each, before the phases. The short profile leaves out the
   * not-sent path: its backoff (SEND_RETRY_INITIAL_MS, 10 s) alone would take a sixth of CI's minute.
   */
  costPaths: OrderPath[];
  /** Worker counts above 1 run on every server (default: on the first only, to keep the run short). */
  scaleAllServers: boolean;
  /** Open loop: offered rates as fractions of the floor's closed-loop throughput with one worker. */
  openLoopFractions: number[];
  /** Open loop with fixed rates (per second) instead, e.g. when the floor is not measured. */
  openLoopRates: number[] | null;
  openLoopSeconds: number;
  /**
   * Orders per paired latency phase (card, product, the switch variants), once per round and server, at half
   * the card's knee; 0: none.
   */
  latencyOrders: number;
  jsonPath: string | null;
  svgPath: string | null;
  markdownPath: string | null;
  /** Extra environment for the product's worker processes, e.g. PG_POOL_MAX=20 (to measure settings). */
  productEnv: Record<string, string>;
  floorEnv: Record<string, string>;
  plainEnv: Record<string, string>;
  devServerDbFile: string | null;
  /** Re-render the tables, JSON, SVG and Markdown of an earlier run's JSON instead of running. */
  fromJson: string | null;
}

const USAGE = `npm run bench -- [options]
  --short                  CI smoke profile (< 60 s): every variant completes, product, card and plain mail every order once
  --concurrency N          closed-loop starters (default 50; short: 10)
  --warmup S, --duration S closed-loop warm-up and measured seconds per phase (default 5 and 15; short: 1 and 3)
  --rounds N               closed loop with 1 worker: run the variants N times, interleaved (default 3; short: 1)
  --workers 1,2,4          worker processes per Temporal variant (and plain-loop processes)
  --variants LIST          any of ${VARIANT_NAMES.join(',')}
                           (default: all but the product-… switch ones, each leaving one extra out, pricing
                           one proposal or turning prepared statements off, and release-2.0, the 2.0.0 release's own worker from a checkout of it)
  --servers LIST           Temporal servers, any of ${SERVER_NAMES.join(',')} (default: dev,stack; short: dev)
                           dev: start-dev or TEMPORAL_ADDRESS; stack: the server on Postgres of npm run stack
  --scale-all-servers      run the 2- and 4-worker phases on every server, not only the first
  --open-fractions LIST    open-loop rates as fractions of the floor's saturation (default 0.25,0.5,0.75,1,1.25,1.5,2)
  --open-rates LIST        open-loop rates per second instead of fractions
  --open-seconds S         seconds of offered load per open-loop rate (default 15; short: 3)
  --no-open-loop           skip the open-loop sweep
  --latency-orders N       per round and server, N orders each for card, product and the product-no… variants
                           in the open loop at half the card's knee (paired p50/p95 ratios; default: none)
  --json PATH              write every figure as JSON
  --svg PATH               write the latency-vs-offered-load chart as SVG
  --markdown PATH          write the results as Markdown tables
  --product-env K=V        extra environment for product workers (repeatable), e.g. PG_POOL_MAX=20
  --floor-env K=V          extra environment for floor workers (repeatable), e.g. BENCH_MAX_CACHED_WORKFLOWS=100
  --plain-env K=V          extra environment for plain-loop processes (repeatable)
  --dev-server-db FILE     run the dev server on a SQLite file instead of in memory
  --from-json FILE         measure nothing: report an earlier run's --json again (tables, --markdown, --svg)
Without DATABASE_URL / TEMPORAL_ADDRESS it starts embedded Postgres and a Temporal dev server itself.`;

export function parseBenchOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      short: { type: 'boolean', default: false },
      concurrency: { type: 'string' },
      warmup: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
      workers: { type: 'string' },
      variants: { type: 'string' },
      servers: { type: 'string' },
      'scale-all-servers': { type: 'boolean', default: false },
      'open-fractions': { type: 'string' },
      'open-rates': { type: 'string' },
      'open-seconds': { type: 'string' },
      'no-open-loop': { type: 'boolean', default: false },
      'latency-orders': { type: 'string' },
      json: { type: 'string' },
      svg: { type: 'string' },
      markdown: { type: 'string' },
      'product-env': { type: 'string', multiple: true },
      'floor-env': { type: 'string', multiple: true },
      'plain-env': { type: 'string', multiple: true },
      'dev-server-db': { type: 'string' },
      'from-json': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const short = values.short;
  const numbers = (text: string | undefined, fallback: number[]): number[] =>
    text === undefined ? fallback : text.split(',').map((part) => positive(part, text));
  const variants = (values.variants?.split(',') ??
    VARIANT_NAMES.filter((name) => !ON_REQUEST_ONLY.includes(name))) as VariantName[];
  for (const name of variants) {
    if (!VARIANT_NAMES.includes(name)) throw new Error(`unknown variant "${name}"\n${USAGE}`);
  }
  const servers = (values.servers?.split(',') ?? (short ? ['dev'] : [...SERVER_NAMES])) as ServerName[];
  for (const name of servers) {
    if (!SERVER_NAMES.includes(name)) throw new Error(`unknown server "${name}"\n${USAGE}`);
  }
  if (new Set(servers).size !== servers.length) throw new Error(`a server is named twice: ${values.servers}`);
  const noOpenLoop = values['no-open-loop'];
  return {
    profile: short ? 'short' : 'full',
    concurrency: numbers(values.concurrency, [short ? 10 : 50])[0]!,
    warmupSeconds: numbers(values.warmup, [short ? 1 : 5])[0]!,
    durationSeconds: numbers(values.duration, [short ? 3 : 15])[0]!,
    rounds: Math.round(numbers(values.rounds, [short ? 1 : 3])[0]!),
    workerCounts: numbers(values.workers, short ? [1] : [1, 2, 4]).map(Math.round),
    variants: short ? variants.filter((name) => name !== 'empty' && name !== 'floor-local') : variants,
    servers,
    costPaths: short ? ORDER_PATHS.filter((path) => path !== 'not-sent-then-accepted') : [...ORDER_PATHS],
    scaleAllServers: values['scale-all-servers'],
    openLoopFractions: noOpenLoop
      ? []
      : numbers(values['open-fractions'], short ? [0.25] : [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2]),
    openLoopRates:
      noOpenLoop || values['open-rates'] === undefined ? null : numbers(values['open-rates'], []),
    openLoopSeconds: numbers(values['open-seconds'], [short ? 3 : 15])[0]!,
    latencyOrders:
      values['latency-orders'] === undefined
        ? 0
        : Math.round(positive(values['latency-orders'], values['latency-orders'])),
    jsonPath: values.json ?? null,
    svgPath: values.svg ?? null,
    markdownPath: values.markdown ?? null,
    productEnv: keyValues(values['product-env']),
    floorEnv: keyValues(values['floor-env']),
    plainEnv: keyValues(values['plain-env']),
    devServerDbFile: values['dev-server-db'] ?? null,
    fromJson: values['from-json'] ?? null,
  };
}

function positive(part: string, whole: string): number {
  const value = Number(part);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`not a positive number: "${part}" in "${whole}"`);
  return value;
}

function keyValues(pairs: string[] | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`expected KEY=VALUE, got "${pair}"`);
    result[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return result;
}
