// The sandbox's provider lookups, played for real: a message becomes visible to a lookup only after the
// indexing lag (as a provider's log catches up), is forgotten once the retention has passed, and a lookup can
// itself fail (a 5xx, a hang until the client gives up, a dropped connection), queued for one order or drawn
// from a seeded plan. Each provider's query and answer shape is in its emulation
// (providers/).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from './httpIo';
import type { ProviderEmulation } from './providers';
import type { ReceivedMessage, SandboxRecords } from './records';
import { InvalidFaultError, seededRandom } from './faults';
import { authenticateAnyKey } from './mailApi';
import { LookupLies, type LieEffect, type LookupLieKind } from './lookupLies';
import { LookupReorder, type ReorderEffect } from './lookupReorder';

export type LookupFault =
  /** Answer this status (a 5xx, a 429…) instead of searching. */
  | { kind: 'status'; status: number }
  /** Answer only after `ms` (never by itself without it): the client's deadline passes first. */
  | { kind: 'hang'; ms?: number }
  /** Close the connection without an answer. */
  | { kind: 'drop' };

export interface LookupSettings {
  /** How long after acceptance a message shows up in lookups. */
  indexingLagMs: number;
  /** How long after acceptance a message is still found. */
  retentionMs: number;
}

/**
 * One second: shorter than every provider's default settle delay (src/mail/providers/*), as a provider's
 * documented figure is an upper bound of its real lag. Tests that want the lag to win set it longer.
 */
export const DEFAULT_INDEXING_LAG_MS = 1_000;
export const DEFAULT_LOOKUP_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface LookupRecord {
  sequence: number;
  receivedAt: string;
  provider: ProviderEmulation['name'];
  path: string;
  /** The order the lookup asked about, when the sandbox can tell from the query. */
  orderId: string | null;
  fault: LookupFault | null;
  status: number | 'dropped' | 'hung';
  /** Messages the search matched (0 for a fault). */
  matches: number;
  /** The lie this lookup told (lookupLies.ts), or null for an honest answer. */
  lie: LookupLieKind | null;
  /** What a reordering index (lookupReorder.ts) hid from this answer; null without one. */
  reorder: ReorderEffect | null;
}

export interface LookupContext {
  /** Every key the account holds now (see MailApiContext). */
  apiKeys: readonly string[];
  records: SandboxRecords;
  hold(res: ServerResponse, answer: () => void, ms: number | undefined): void;
  now(): Date;
}

export class SandboxLookups {
  private settings: LookupSettings;
  private readonly queues = new Map<string, LookupFault[]>();
  private plan: { fault: LookupFault; probability: number }[] = [];
  private random: () => number;
  private list: LookupRecord[] = [];
  /** The lies it tells when a plan is set (lookupLies.ts). */
  readonly lies: LookupLies;
  /** The index's reordering when a plan is set (lookupReorder.ts). */
  readonly reorder = new LookupReorder();

  constructor(
    initial: Partial<LookupSettings>,
    private readonly seed: number,
  ) {
    this.settings = {
      indexingLagMs: initial.indexingLagMs ?? DEFAULT_INDEXING_LAG_MS,
      retentionMs: initial.retentionMs ?? DEFAULT_LOOKUP_RETENTION_MS,
    };
    this.random = seededRandom(seed);
    this.lies = new LookupLies(seed);
  }

  configure(changes: Partial<LookupSettings>): void {
    for (const [name, value] of Object.entries(changes)) {
      if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
        throw new InvalidFaultError(`${name} must be an integer >= 0.`);
      }
    }
    this.settings = { ...this.settings, ...stripUndefined(changes) };
  }

  queueFault(orderId: string, fault: LookupFault, times = 1): void {
    const parsed = parseLookupFault(fault);
    if (!Number.isInteger(times) || times < 1) throw new InvalidFaultError('times must be an integer >= 1.');
    const queue = this.queues.get(orderId) ?? [];
    for (let i = 0; i < times; i += 1) queue.push(parsed);
    this.queues.set(orderId, queue);
  }

  setPlan(rates: { fault: LookupFault; probability: number }[], seed?: number): void {
    const parsed = rates.map((rate) => {
      if (typeof rate.probability !== 'number' || !(rate.probability >= 0 && rate.probability <= 1)) {
        throw new InvalidFaultError('Each lookup fault rate needs a probability from 0 to 1.');
      }
      return { fault: parseLookupFault(rate.fault), probability: rate.probability };
    });
    if (parsed.reduce((sum, rate) => sum + rate.probability, 0) > 1 + 1e-9) {
      throw new InvalidFaultError('The lookup fault probabilities add up to more than 1.');
    }
    this.plan = parsed;
    this.random = seededRandom(seed ?? this.seed);
  }

  records(): LookupRecord[] {
    return this.list.map((record) => ({ ...record }));
  }

  reset(): void {
    this.queues.clear();
    this.plan = [];
    this.list = [];
    this.random = seededRandom(this.seed);
    this.lies.reset();
    this.reorder.reset();
  }

  /** Whether `message` is in the provider's index at `now`: past the lag (or its hold), not yet forgotten. */
  isIndexed(message: ReceivedMessage, now: Date, extraLagMs = 0): boolean {
    const age = now.getTime() - Date.parse(message.receivedAt);
    const showsAt = this.reorder.showsAtAgeMs(message, this.settings.indexingLagMs) + extraLagMs;
    return age >= showsAt && age < this.settings.retentionMs;
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    emulation: ProviderEmulation,
    context: LookupContext,
  ): Promise<void> {
    const reading = await readBody(req);
    if (reading.kind === 'client-gone') return;
    const lookup = emulation.lookup!;
    const orderId = orderIdOfQuery(url);
    let lie: LieEffect | null = null;
    const record = (
      status: LookupRecord['status'],
      fault: LookupFault | null,
      matches: number,
    ): LookupRecord => {
      const stored: LookupRecord = {
        sequence: this.list.length + 1,
        receivedAt: context.now().toISOString(),
        provider: emulation.name,
        path: url.pathname,
        orderId,
        fault,
        status,
        matches,
        lie: lie?.kind ?? null,
        reorder: null,
      };
      this.list.push(stored);
      return stored;
    };
    const denied = authenticateAnyKey(context.apiKeys, (key) => emulation.authenticate(req.headers, key));
    if (denied !== null) {
      record(denied.status, null, 0);
      return sendAnswer(res, denied.status, denied.body);
    }
    const fault = this.nextFault(orderId);
    // A lie only where no fault was injected: each lookup is one or the other, so both are counted truly.
    lie = fault === null ? this.lies.draw({ canPage: lookup.pages, nowMs: context.now().getTime() }) : null;
    if (lie?.status !== undefined) {
      record(lie.status, null, 0);
      return sendAnswer(res, lie.status, emulation.error(lie.status, undefined).body);
    }
    if (fault !== null && fault.kind !== 'hang') {
      if (fault.kind === 'drop') {
        record('dropped', fault, 0);
        req.socket.destroy();
        return;
      }
      record(fault.status, fault, 0);
      return sendAnswer(res, fault.status, emulation.error(fault.status, undefined).body);
    }
    // The search runs on what is indexed when the answer is given, as a provider's would.
    const search = (): {
      matches: number;
      status: number;
      body: unknown;
      reorder: ReorderEffect | null;
    } => {
      const now = context.now();
      const taken = context.records
        .messages()
        .filter(
          (message) =>
            message.provider === emulation.name &&
            now.getTime() - Date.parse(message.receivedAt) < this.settings.retentionMs,
        );
      const indexed =
        lie?.emptyIndex === true
          ? []
          : taken.filter((message) => this.isIndexed(message, now, lie?.extraLagMs));
      // isIndexed's own bound: everything not held and received at least the lag ago is in `indexed`.
      const upTo = new Date(now.getTime() - this.settings.indexingLagMs - (lie?.extraLagMs ?? 0));
      const shown = new Set(indexed);
      const hidden = taken.filter(
        (message) =>
          !shown.has(message) &&
          this.reorder.holds(message) &&
          Date.parse(message.receivedAt) <= upTo.getTime(),
      );
      const watermark = lie?.emptyIndex === true ? upTo : this.reorder.watermark(taken, hidden, upTo);
      const { matches, answer } = lookup.search(url, indexed, {
        origin: `http://${req.headers.host ?? 'sandbox.invalid'}`,
        watermark,
        ...(lie?.pageSize === undefined ? {} : { pageSize: lie.pageSize }),
        ...(lie?.ignoreFilter === true ? { ignoreFilter: true } : {}),
        ...(lie?.mixIn === undefined ? {} : { mixIn: mixIn(lie.mixIn, orderId, indexed, emulation.name) }),
      });
      const reorder =
        lie?.emptyIndex === true
          ? null
          : this.reorder.effect(indexed, hidden, emulation.name === 'generic' ? watermark : null);
      return { matches, status: answer.status, body: answer.body, reorder };
    };
    if (fault?.kind === 'hang') {
      const entry = record('hung', fault, 0);
      context.hold(
        res,
        () => {
          const result = search();
          entry.status = result.status;
          entry.matches = result.matches;
          entry.reorder = result.reorder;
          sendAnswer(res, result.status, result.body);
        },
        fault.ms,
      );
      return;
    }
    const result = search();
    record(result.status, null, result.matches).reorder = result.reorder;
    sendAnswer(res, result.status, result.body);
  }

  private nextFault(orderId: string | null): LookupFault | null {
    if (orderId !== null) {
      const queued = this.queues.get(orderId)?.shift();
      if (queued !== undefined) return queued;
    }
    if (this.plan.length === 0) return null;
    const draw = this.random();
    let upTo = 0;
    for (const rate of this.plan) {
      upTo += rate.probability;
      if (draw < upTo) return rate.fault;
    }
    return null;
  }
}

export function parseLookupFault(input: unknown): LookupFault {
  if (typeof input !== 'object' || input === null)
    throw new InvalidFaultError('A lookup fault must be an object.');
  const fault = input as Record<string, unknown>;
  switch (fault.kind) {
    case 'drop':
      return { kind: 'drop' };
    case 'hang':
      if (fault.ms === undefined) return { kind: 'hang' };
      if (!Number.isInteger(fault.ms) || (fault.ms as number) < 0) {
        throw new InvalidFaultError('hang: ms must be an integer >= 0.');
      }
      return { kind: 'hang', ms: fault.ms as number };
    case 'status':
      if (
        !Number.isInteger(fault.status) ||
        (fault.status as number) < 400 ||
        (fault.status as number) > 599
      ) {
        throw new InvalidFaultError('status: a lookup fault status must be an integer from 400 to 599.');
      }
      return { kind: 'status', status: fault.status as number };
    default:
      throw new InvalidFaultError(
        `Unknown lookup fault kind ${JSON.stringify(String(fault.kind)).slice(0, 60)}.`,
      );
  }
}

/**
 * The order a lookup is about: the generic API names it (order_id); the others carry our send key
 * (`order-confirmation/<deployment>/<order id>/…`) in their filter. Null when neither is there.
 */
function orderIdOfQuery(url: URL): string | null {
  const direct = url.searchParams.get('order_id');
  if (direct !== null && direct !== '') return direct;
  for (const value of url.searchParams.values()) {
    const match = /order-confirmation\/[A-Za-z0-9._-]+\/([0-9]+)\//.exec(value);
    if (match !== null) return match[1]!;
  }
  return null;
}

/**
 * What a mixing lie puts into an answer: up to three messages of other orders, or one message of the same
 * order from another deployment (its send key and message id name "lie-staging", as a staging system's would).
 */
function mixIn(
  kind: 'other-orders' | 'other-deployment',
  orderId: string | null,
  indexed: ReceivedMessage[],
  provider: ProviderEmulation['name'],
): ReceivedMessage[] {
  if (kind === 'other-orders') return indexed.filter((message) => message.orderId !== orderId).slice(0, 3);
  const order = orderId ?? '0';
  const sendKey = `order-confirmation/lie-staging/${order}/0`;
  return [
    {
      id: provider === 'mailgun' ? `<${sendKey}@lie-staging.example>` : `lie-staging-${order}`,
      provider,
      orderId: order,
      to: 'someone-else@example.invalid',
      from: 'staging@example.invalid',
      replyTo: null,
      subject: 'another deployment',
      text: '',
      html: null,
      idempotencyKey: null,
      sendKey,
      receivedAt: new Date(0).toISOString(),
      fault: null,
    },
  ];
}

function sendAnswer(res: ServerResponse, status: number, body: unknown): void {
  sendJson(res, status, body);
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
