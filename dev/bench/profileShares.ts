// Where a worker's CPU went, from the .cpuprofile files V8 writes (node --cpu-prof): each file's self time by
// what ran it (our code, the pg and undici clients, the Temporal SDK, Node, GC), so a profile of the bench's
// workers reads as a table (docs/benchmarks.md, "Where the worker's CPU per order goes").
//
//   npm run bench:profile -- [--skip-ms N] [--top N] [--orders N] DIR_OR_FILE...   (dev/cli/profileShares.ts)
//
// Idle samples and start-up (module loading, tsx, webpack bundling the workflows) never count; --skip-ms
// also leaves out each profile's first N ms. Shares are of the busy time of all files given.
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

// First match wins: the order matters where a path could match two (our src/ under node_modules never does).
const CATEGORIES: ReadonlyArray<readonly [string, (url: string, name: string) => boolean]> = [
  ['GC', (_url, name) => name === '(garbage collector)'],
  // Every call into a workflow's context starts and joins a watchdog thread (docs/benchmarks.md).
  [
    "runInContext (the SDK's call into a workflow, with its timeout watchdog)",
    (_url, name) => name === 'runInContext',
  ],
  ['writev (socket and pipe writes: pg, stdout, the core)', (_url, name) => name === 'writev'],
  ['our logging (src/workerLog.ts)', (url) => url.includes('/src/workerLog')],
  ['our mail rendering (src/mail/render*)', (url) => /\/src\/mail\/render/.test(url)],
  ['our code (src/, the rest)', (url) => url.includes('/src/') && !url.includes('node_modules')],
  // The bench's card (docs/benchmarks.md, "The card"): its activities and worker, over the product's modules.
  ["the card's own code (dev/bench/card)", (url) => url.includes('/dev/bench/card/')],
  [
    "workflow bundle in the sandbox (our workflow, the SDK's workflow half)",
    (url) => url.includes('workflow-bundle-') || url.startsWith('evalmachine'),
  ],
  ['pg client and pool', (url) => /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-)/.test(url)],
  ['undici (the mail API request)', (url) => url.includes('undici')],
  ['OpenTelemetry', (url) => url.includes('@opentelemetry')],
  ['Temporal SDK (bridge, worker, sandbox plumbing)', (url) => url.includes('@temporalio')],
  ['other npm packages', (url) => url.includes('node_modules')],
  ['Node internals', (url) => url.startsWith('node:')],
  ['native and V8 (no script)', () => true],
];
// Not busy (idle), or the process starting (loading modules, tsx compiling, webpack bundling the workflows):
// neither is per-order work.
const NOT_BUSY = new Set(['(idle)', '(program)']);
const START_UP = (url: string, name: string): boolean =>
  /node:internal\/modules|tsx\/dist|node_modules\/webpack|node_modules\/(terser|acorn|enhanced-resolve|swc|@swc|esbuild)/.test(
    url,
  ) ||
  [
    'readFileUtf8',
    'open',
    'compileFunction',
    'stat',
    'lstat',
    'internalModuleStat',
    'compileSourceTextModule',
  ].includes(name);

export interface Shares {
  busyMs: number;
  byCategory: Map<string, number>;
  byFile: Map<string, number>;
  /** Self time by function (`name path:line`, the path from node_modules/ or the project on): the top frames. */
  byFrame: Map<string, number>;
}

/** `name path:line`, the path cut to what names it (a package, or the project's own file). */
export function frameName(callFrame: { functionName: string; url: string; lineNumber?: number }): string {
  const { functionName, url, lineNumber } = callFrame;
  const cut = url.lastIndexOf('node_modules/');
  const own = url.search(/\/(src|dev|test)\//);
  const where = cut >= 0 ? url.slice(cut + 'node_modules/'.length) : own >= 0 ? url.slice(own + 1) : url;
  const line = lineNumber === undefined || lineNumber < 0 ? '' : `:${lineNumber + 1}`;
  return `${functionName === '' ? '(anonymous)' : functionName}${where === '' ? '' : ` ${where}${line}`}`;
}

export function profileShares(files: readonly string[], skipMs: number): Shares {
  const byCategory = new Map<string, number>();
  const byFile = new Map<string, number>();
  const byFrame = new Map<string, number>();
  let busyMs = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const category = new Map<number, string | null>();
    const frames = new Map<number, string>();
    for (const node of profile.nodes) {
      const { functionName, url } = node.callFrame;
      frames.set(node.id, frameName(node.callFrame));
      category.set(
        node.id,
        NOT_BUSY.has(functionName) || START_UP(url, functionName)
          ? null
          : CATEGORIES.find(([, matches]) => matches(url, functionName))![0],
      );
    }
    let elapsedUs = 0;
    let fileMs = 0;
    profile.samples.forEach((nodeId, index) => {
      const deltaUs = profile.timeDeltas[index] ?? 0;
      elapsedUs += deltaUs;
      const name = category.get(nodeId);
      if (elapsedUs < skipMs * 1_000 || name === null || name === undefined) return;
      byCategory.set(name, (byCategory.get(name) ?? 0) + deltaUs / 1_000);
      const frame = frames.get(nodeId)!;
      byFrame.set(frame, (byFrame.get(frame) ?? 0) + deltaUs / 1_000);
      fileMs += deltaUs / 1_000;
    });
    byFile.set(path.basename(file), fileMs);
    busyMs += fileMs;
  }
  return { busyMs, byCategory, byFile, byFrame };
}
