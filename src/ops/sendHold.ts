// `npm run ops -- hold` / `resume`: stop every send (or one provider's) now, and release the held runs later
// (docs/operating.md "Holding every send"). The hold is a row the dispatch fence reads in its one statement;
// hold returns once nothing dispatched before it is still unrecorded, resume signals the runs that wait.
import type { Client } from '@temporalio/client';
import {
  EVERY_PROVIDER,
  listDispatchedUnrecorded,
  liftSendHold,
  readRowProviders,
  readSendHolds,
  setSendHold,
  waitOutEarlierWrites,
  type HoldScope,
  type InFlightAttempt,
  type SendHoldRow,
} from '../db/sendHolds';
import type { Database } from '../db/pool';
import { OrderMailState } from '../shared/orderMailSearchAttributes';
import { ORDER_MAIL_WORKFLOW_TYPE, SEND_HOLD_RESUME_SIGNAL } from '../shared/workflowContract';
import { OpsRefusal } from './opsContext';

/** How long hold waits by default for attempts dispatched before it to be recorded: above a send's timeout. */
export const DEFAULT_HOLD_WAIT_MS = 120_000;
/** Resume signals at most this many held runs a second by default: their claims and sends follow at once. */
export const DEFAULT_RESUME_RATE_PER_SECOND = 20;
const IN_FLIGHT_POLL_MS = 500;
// Visibility lags the runs a little: resume looks again until a look finds no held run it has not signalled.
const RESUME_LOOK_AGAIN_MS = 2_000;
const RESUME_LOOKS = 5;

export interface HoldResult {
  scope: HoldScope;
  /** The hold in force: this act's, or the one already set (then `alreadyHeld`). */
  hold: SendHoldRow;
  alreadyHeld: boolean;
  /** Dispatched before the hold and still unrecorded when hold stopped waiting: empty when none is in flight. */
  inFlight: InFlightAttempt[];
  /**
   * False when a write to order_mail_log that began before the hold was still running at the bound: a fence
   * statement among them may still pass. The hold stands either way.
   */
  earlierWritesEnded: boolean;
  waitedMs: number;
}

export interface ResumeResult {
  scope: HoldScope;
  lifted: SendHoldRow;
  /** Holds still in force after this one was lifted (their runs stay held). */
  stillHeld: SendHoldRow[];
  /** The runs signalled to claim again, by order id. */
  signalled: string[];
}

function configuredOrRefuse(scope: HoldScope, configured: readonly string[] | null | undefined): void {
  if (scope !== EVERY_PROVIDER && configured != null && !configured.includes(scope)) {
    throw new OpsRefusal(
      'PROVIDER_NOT_CONFIGURED',
      `${scope} is not in MAIL_PROVIDERS (${configured.join(', ')}); nothing was changed.`,
    );
  }
}

/**
 * Sets the hold, waits out earlier fence statements, then up to `waitMs` for dispatched attempts in its scope
 * to be recorded; returns what is still unrecorded (the hold stays either way).
 */
export async function holdSends(
  db: Database,
  input: {
    scope: HoldScope;
    reason: string;
    waitMs?: number;
    configured?: readonly string[] | null;
  },
): Promise<HoldResult> {
  configuredOrRefuse(input.scope, input.configured);
  const waitMs = input.waitMs ?? DEFAULT_HOLD_WAIT_MS;
  const startedAt = Date.now();
  const set = await setSendHold(db, input);
  const hold = set ?? (await readSendHolds(db)).find((row) => row.scope === input.scope);
  if (hold === undefined) {
    // Lifted between our insert's conflict and this read: nothing is held, say so rather than guess.
    throw new OpsRefusal(
      'CHANGED_MEANWHILE',
      `the hold on ${input.scope} was lifted meanwhile; run hold again.`,
    );
  }
  let earlierWritesEnded = true;
  try {
    await waitOutEarlierWrites(db, waitMs);
  } catch (error) {
    // lock_not_available: a write began before the hold and outlasted the bound. The hold stands; say so.
    if ((error as { code?: string }).code !== '55P03') throw error;
    earlierWritesEnded = false;
  }
  for (;;) {
    const inFlight = await listDispatchedUnrecorded(db, input.scope);
    const waitedMs = Date.now() - startedAt;
    if ((inFlight.length === 0 && earlierWritesEnded) || waitedMs >= waitMs) {
      return { scope: input.scope, hold, alreadyHeld: set === null, inFlight, earlierWritesEnded, waitedMs };
    }
    await delay(Math.min(IN_FLIGHT_POLL_MS, waitMs - waitedMs));
  }
}

/**
 * Lifts the hold, then signals every run waiting out a hold whose provider no remaining hold covers, at most
 * `ratePerSecond` a second. A run the signal misses claims again at its fallback timer.
 */
export async function resumeSends(
  ctx: { db: Database; client: Client; configured?: readonly string[] | null },
  input: { scope: HoldScope; reason: string; ratePerSecond?: number },
): Promise<ResumeResult> {
  configuredOrRefuse(input.scope, ctx.configured);
  const lifted = await liftSendHold(ctx.db, input);
  if (lifted === null) {
    const holds = await readSendHolds(ctx.db);
    throw new OpsRefusal(
      'NOT_HELD',
      `${describeScope(input.scope)} is not held; nothing was changed. Holds in force: ` +
        (holds.length === 0 ? 'none.' : holds.map((hold) => describeScope(hold.scope)).join(', ') + '.'),
    );
  }
  const { stillHeld, signalled } = await releaseHeldRuns(ctx, input.ratePerSecond);
  return { scope: input.scope, lifted, stillHeld, signalled };
}

/**
 * Signals every held run whose provider no hold covers, at `ratePerSecond`, until a look finds none new;
 * a second call finishes a resume that was cut off.
 */
export async function releaseHeldRuns(
  ctx: { db: Database; client: Client },
  ratePerSecond: number = DEFAULT_RESUME_RATE_PER_SECOND,
): Promise<{ stillHeld: SendHoldRow[]; signalled: string[] }> {
  const stillHeld = await readSendHolds(ctx.db);
  const covered = (provider: string | null) =>
    stillHeld.some((hold) => hold.scope === EVERY_PROVIDER || hold.scope === provider);
  const intervalMs = 1000 / ratePerSecond;
  const signalled = new Set<string>();
  if (!stillHeld.some((hold) => hold.scope === EVERY_PROVIDER)) {
    for (let look = 0; look < RESUME_LOOKS; look++) {
      const held = await listHeldRuns(ctx.client);
      const fresh = held.filter((orderId) => !signalled.has(orderId));
      const providers = await readRowProviders(ctx.db, fresh);
      let sent = 0;
      for (const orderId of fresh) {
        if (covered(providers.get(orderId) ?? null)) continue;
        await signalResume(ctx.client, orderId);
        signalled.add(orderId);
        sent += 1;
        await delay(intervalMs);
      }
      if (sent === 0 && look > 0) break;
      await delay(RESUME_LOOK_AGAIN_MS);
    }
  }
  return { stillHeld, signalled: [...signalled] };
}

/** Order ids of open mail runs that show they wait out a hold (the Web UI filter OrderMailState = "held"). */
async function listHeldRuns(client: Client): Promise<string[]> {
  const ids: string[] = [];
  const query =
    `WorkflowType = '${ORDER_MAIL_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND ` +
    `${OrderMailState.name} = 'held'`;
  for await (const run of client.workflow.list({ query })) ids.push(run.workflowId);
  return ids;
}

async function signalResume(client: Client, orderId: string): Promise<void> {
  try {
    await client.workflow.getHandle(orderId).signal(SEND_HOLD_RESUME_SIGNAL);
  } catch (error) {
    // A run that closed since it was listed needs no signal.
    if ((error as { name?: string }).name !== 'WorkflowNotFoundError') throw error;
  }
}

export function describeScope(scope: HoldScope): string {
  return scope === EVERY_PROVIDER ? 'every provider' : `provider ${scope}`;
}

export function formatHold(result: HoldResult): string {
  const { hold } = result;
  const lines = [
    result.alreadyHeld
      ? `Already held: sends through ${describeScope(result.scope)} since ${hold.heldAt.toISOString()} by ` +
        `${hold.heldBy} (${hold.reason}).`
      : `Held: no send through ${describeScope(result.scope)} passes the dispatch fence from now on ` +
        `(held by ${hold.heldBy}: ${hold.reason}).`,
  ];
  if (!result.earlierWritesEnded) {
    lines.push(
      `A write to order_mail_log that began before the hold was still running after ${Math.round(result.waitedMs / 1000)} s: ` +
        'a send that reached its fence before the hold may still go out. Run hold again to wait for it.',
    );
  }
  if (result.inFlight.length === 0) {
    lines.push(
      `Nothing dispatched before the hold is in flight (waited ${Math.round(result.waitedMs / 100) / 10} s).`,
    );
  } else {
    lines.push(
      `${result.inFlight.length} attempt(s) dispatched before the hold were still unrecorded after ` +
        `${Math.round(result.waitedMs / 1000)} s (their requests may still be in flight; npm run ops -- status <order>):`,
      ...result.inFlight.map(
        (row) =>
          `  order ${row.orderId} attempt ${row.attempt} via ${row.provider ?? '(no provider)'}, dispatched ` +
          row.dispatchedAt.toISOString(),
      ),
    );
  }
  lines.push(
    'Lift it with: npm run ops -- resume' +
      (result.scope === EVERY_PROVIDER ? '' : ` --provider ${result.scope}`) +
      ' --reason "…"',
  );
  return lines.join('\n');
}

export function formatResume(result: ResumeResult): string {
  const lines = [
    `Lifted the hold on ${describeScope(result.scope)} (set by ${result.lifted.heldBy} at ` +
      `${result.lifted.heldAt.toISOString()}: ${result.lifted.reason}).`,
    `Signalled ${result.signalled.length} held run(s) to claim again.`,
  ];
  if (result.stillHeld.length > 0) {
    lines.push(
      `Still held: ${result.stillHeld.map((hold) => describeScope(hold.scope)).join(', ')}; their runs keep waiting.`,
    );
  }
  return lines.join('\n');
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
