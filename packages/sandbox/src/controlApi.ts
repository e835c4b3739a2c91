// `/_sandbox/*`: lets another process (the demo, child-process tests) read what the sandbox saw and steer
// its faults. Unauthenticated on purpose: the sandbox listens on loopback and holds no real mail.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidFaultError, parseFault, parseFaultPlan, type Fault, type FaultPlan } from './faults';
import { parseJson, readBody, sendJson } from './httpIo';
import { parseLookupFault, type LookupFault, type LookupRecord, type LookupSettings } from './lookups';
import { parseLookupLiePlan, type LookupLieKind } from './lookupLies';
import { parseLookupReorderPlan } from './lookupReorder';
import type { ReceivedMessage, RequestRecord } from './records';
import type { WebhookLieCount, WebhookLieKind, WebhookLiePosting } from './webhookLies';
import type { SesLieKind } from './snsLies';
import type { WebhookDeliveryRecord, WebhookSettings } from './webhooks';

/** The sandbox operations the control API exposes. */
export interface SandboxControls {
  messages(): ReceivedMessage[];
  messagesFor(orderId: string): ReceivedMessage[];
  requests(): RequestRecord[];
  queueFault(orderId: string, fault: Fault, times?: number): void;
  setFaultPlan(plan: FaultPlan): void;
  refuseConnectionsFor(ms: number): Promise<void>;
  releaseHeld(): number;
  reset(): void;
  lookups(): LookupRecord[];
  configureLookups(settings: Partial<LookupSettings>): void;
  queueLookupFault(orderId: string, fault: LookupFault, times?: number): void;
  setLookupFaultPlan(rates: { fault: LookupFault; probability: number }[], seed?: number): void;
  /** Validated by parseLookupLiePlan (lookupLies.ts). */
  setLookupLies(plan: unknown): void;
  /** Validated by parseLookupReorderPlan (lookupReorder.ts); null stops it. */
  setLookupReorder(plan: unknown): void;
  lookupLiesTold(): Record<LookupLieKind, number>;
  webhookDeliveries(): WebhookDeliveryRecord[];
  webhookLies(): Record<WebhookLieKind | SesLieKind, WebhookLieCount>;
  /** Every posting the webhook lies made, with the receiver's answer. */
  webhookLiePostings(): WebhookLiePosting[];
  configureWebhooks(settings: Partial<WebhookSettings>): void;
  readonly webhookKeys: { sendgridPublicKey: string; mailgunSigningKey: string };
}

export const CONTROL_PREFIX = '/_sandbox/';

export async function handleControlRequest(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  controls: SandboxControls,
): Promise<void> {
  const reading = await readBody(req);
  if (reading.kind === 'client-gone') return;
  if (reading.kind === 'too-large') return sendJson(res, 413, { error: 'payload too large' });
  const route = `${req.method ?? ''} ${url.pathname}`;
  const parsed = reading.text === '' ? { ok: true as const, value: {} } : parseJson(reading.text);
  if (!parsed.ok) return sendJson(res, 400, { error: 'malformed JSON' });
  if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    return sendJson(res, 400, { error: 'body must be a JSON object' });
  }
  const body = parsed.value as Record<string, unknown>;

  try {
    switch (route) {
      case 'GET /_sandbox/messages': {
        const orderId = url.searchParams.get('orderId');
        return sendJson(res, 200, {
          messages: orderId === null ? controls.messages() : controls.messagesFor(orderId),
        });
      }
      case 'GET /_sandbox/requests':
        return sendJson(res, 200, { requests: controls.requests() });
      case 'POST /_sandbox/faults':
        applyFaultRequest(body, controls);
        return sendJson(res, 200, { ok: true });
      case 'POST /_sandbox/refuse': {
        const ms = body.ms;
        if (!Number.isInteger(ms) || (ms as number) <= 0) {
          return sendJson(res, 400, { error: 'ms must be a positive integer' });
        }
        await controls.refuseConnectionsFor(ms as number);
        // This socket outlives the listener; tell the client not to send anything else on it.
        return sendJson(res, 200, { ok: true }, { connection: 'close' });
      }
      case 'POST /_sandbox/release':
        return sendJson(res, 200, { released: controls.releaseHeld() });
      case 'POST /_sandbox/reset':
        controls.reset();
        return sendJson(res, 200, { ok: true });
      case 'GET /_sandbox/lookups':
        return sendJson(res, 200, { lookups: controls.lookups(), liesTold: controls.lookupLiesTold() });
      case 'POST /_sandbox/lookups':
        applyLookupRequest(body, controls);
        return sendJson(res, 200, { ok: true });
      case 'GET /_sandbox/webhooks':
        return sendJson(res, 200, {
          deliveries: controls.webhookDeliveries(),
          lies: controls.webhookLies(),
          keys: controls.webhookKeys,
        });
      case 'POST /_sandbox/webhooks':
        // Checked by configureWebhooks, which refuses a bad value before changing anything.
        controls.configureWebhooks(
          pick(body, [
            'url',
            'delayMs',
            'duplicateProbability',
            'lossProbability',
            'lieProbability',
            'lieKinds',
          ]),
        );
        return sendJson(res, 200, { ok: true });
      default:
        return sendJson(res, 404, { error: 'no such control endpoint' });
    }
  } catch (error) {
    if (error instanceof InvalidFaultError) return sendJson(res, 400, { error: error.message });
    throw error;
  }
}

/**
 * {indexingLagMs?, retentionMs?, queue?: [{orderId, fault, times?}], plan?: {rates, seed?},
 *  lies?: {rates: [{kind, probability}], lagMs, seed?}, reorder?: {holdMs, share?, watermark?, seed?} | null};
 *  validated first.
 */
function applyLookupRequest(body: Record<string, unknown>, controls: SandboxControls): void {
  const queue = body.queue === undefined ? [] : body.queue;
  if (!Array.isArray(queue)) throw new InvalidFaultError('queue must be an array.');
  const entries = queue.map((item: unknown) => {
    const { orderId, fault, times } = (item ?? {}) as { orderId?: unknown; fault?: unknown; times?: unknown };
    if (typeof orderId !== 'string' || orderId.length === 0) {
      throw new InvalidFaultError('Each queue entry needs an orderId.');
    }
    if (times !== undefined && (!Number.isInteger(times) || (times as number) < 1)) {
      throw new InvalidFaultError('times must be an integer >= 1.');
    }
    return { orderId, fault: parseLookupFault(fault), times: (times as number | undefined) ?? 1 };
  });
  const plan = body.plan as { rates?: unknown; seed?: unknown } | undefined;
  if (plan !== undefined && (typeof plan !== 'object' || plan === null || !Array.isArray(plan.rates))) {
    throw new InvalidFaultError('plan must be an object with a rates array.');
  }
  const lies = body.lies === undefined ? undefined : parseLookupLiePlan(body.lies);
  const reorder =
    body.reorder === undefined || body.reorder === null ? body.reorder : parseLookupReorderPlan(body.reorder);
  controls.configureLookups(pick(body, ['indexingLagMs', 'retentionMs']));
  if (lies !== undefined) controls.setLookupLies(lies);
  if (reorder !== undefined) controls.setLookupReorder(reorder);
  for (const entry of entries) controls.queueLookupFault(entry.orderId, entry.fault, entry.times);
  if (plan !== undefined) {
    controls.setLookupFaultPlan(
      plan.rates as { fault: LookupFault; probability: number }[],
      typeof plan.seed === 'number' ? plan.seed : undefined,
    );
  }
}

function pick(body: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (body[name] !== undefined) picked[name] = body[name];
  return picked;
}

/** Validates the whole request before applying any of it, so a bad entry changes nothing. */
function applyFaultRequest(body: Record<string, unknown>, controls: SandboxControls): void {
  const queue = body.queue === undefined ? [] : body.queue;
  if (!Array.isArray(queue)) throw new InvalidFaultError('queue must be an array.');
  const entries = queue.map((item: unknown) => {
    const { orderId, fault, times } = (item ?? {}) as { orderId?: unknown; fault?: unknown; times?: unknown };
    if (typeof orderId !== 'string' || orderId.length === 0) {
      throw new InvalidFaultError('Each queue entry needs an orderId.');
    }
    if (times !== undefined && (!Number.isInteger(times) || (times as number) < 1)) {
      throw new InvalidFaultError('times must be an integer >= 1.');
    }
    return { orderId, fault: parseFault(fault), times: (times as number | undefined) ?? 1 };
  });
  const plan = body.plan === undefined ? null : parseFaultPlan(body.plan);
  for (const entry of entries) controls.queueFault(entry.orderId, entry.fault, entry.times);
  if (plan !== null) controls.setFaultPlan(plan);
}
