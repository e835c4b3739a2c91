// The sandbox's provider webhooks, played for real: for every message the SendGrid or Mailgun emulation
// accepted, its events (accepted, then delivered, or bounced for a recipient whose address starts with
// "bounce") are POSTed to the receiver (src/webhooks/webhookServer.ts), signed the way each provider signs
// them, after a configurable delay; some are lost, some delivered twice (re-signed, as a provider's retry is),
// and a failed delivery is retried a few times with backoff. The draws come from a seeded generator.
// With lieProbability > 0 (the chaos profile's lying provider), a share of messages is also followed by a
// webhook lie of one of lieKinds (webhookLies.ts), each counted by kind with the
// receiver's answer (lies()); those draws come from a generator of their own, so turning lies on changes no
// other draw. SES's events go out through the sandbox's SNS: retried as the subscription's delivery policy
// says (snsDeliveryPolicy.ts), and under configureSnsChaos() followed by SNS lies
// (snsLies.ts), about messages SES took and about sends it answered without taking them.
import { generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { Pool } from 'undici';
import { mailgunSignature } from './providerFormats';
import { SandboxSns } from './sns';
import { DOCUMENTED_SNS_DELIVERY_POLICY, snsRetryDelaysMs } from './snsDeliveryPolicy';
import { SES_LIE_KINDS, type SesLieKind, type SnsForger } from './snsLies';
import { seededRandom, InvalidFaultError } from './faults';
import type { ReceivedMessage } from './records';
import {
  emptyLieCounts,
  lieAnswer,
  lieRequests,
  type LieHttpAnswer,
  WEBHOOK_LIE_KINDS,
  type LieRequest,
  type WebhookLieCount,
  type WebhookLieKind,
  type WebhookLiePosting,
} from './webhookLies';

export interface WebhookSettings {
  /** Base URL of the receiver, e.g. http://127.0.0.1:8090; null sends nothing. */
  url: string | null;
  /** How long after the acceptance the first event is posted; later events follow at the same pace. */
  delayMs: number;
  /** Share of events posted a second time, re-signed (a provider's redelivery). */
  duplicateProbability: number;
  /** Share of events never posted (a provider gave up). */
  lossProbability: number;
  /** Share of accepted messages followed by one webhook lie (0: an honest provider). */
  lieProbability: number;
  /** The kinds of lie told, drawn evenly; default all of them. */
  lieKinds: WebhookLieKind[];
}

export const DEFAULT_WEBHOOK_DELAY_MS = 200;
export const DEFAULT_MAILGUN_SIGNING_KEY = 'sandbox-webhook-signing-key';
const DELIVERY_TIMEOUT_MS = 5_000;
const RETRY_DELAYS_MS = [250, 1_000, 3_000];
const ORDER_ID = /^[1-9][0-9]*$/;

export interface WebhookDeliveryRecord {
  sequence: number;
  provider: 'sendgrid' | 'mailgun' | 'ses';
  orderId: string;
  eventId: string;
  eventType: string;
  /** False for the first posting of an event, true for its duplicate. */
  duplicate: boolean;
  /** 1 for the first try of a posting, more for its retries. */
  attempt: number;
  status: number | 'failed';
  postedAt: string;
  /** How long after the event's first posting this one was made (SNS keeps the first Timestamp on a retry). */
  lateByMs: number;
}

/** The chaos run's SNS: its forger, how often it lies about sends SES did not take, how stale a stale lie is. */
export interface SnsChaos {
  forger: SnsForger;
  /** Share of the sends SES answered without taking (5xx, dropped) followed by one SNS lie. */
  notTakenLieProbability: number;
  /** How far before now a 'stale' lie's Timestamp is: past what the receiver takes from a retry. */
  staleByMs: number;
}

interface PlannedEvent {
  provider: 'sendgrid' | 'mailgun' | 'ses';
  orderId: string;
  eventId: string;
  eventType: string;
  body: (now: Date) => { body: string; headers: Record<string, string> };
}

export class SandboxWebhooks {
  /** SendGrid's verification key for the receiver's SENDGRID_WEBHOOK_PUBLIC_KEY: base64 DER, as SendGrid shows it. */
  readonly sendgridPublicKey: string;
  private readonly sendgridPrivateKey: KeyObject;
  private settings: WebhookSettings;
  private random: () => number;
  private lieRandom: () => number;
  private lieCounts = emptyLieCounts();
  /** The delays between SNS's retries of one SES event (the subscription's delivery policy). */
  private snsRetryDelaysMs = snsRetryDelaysMs(DOCUMENTED_SNS_DELIVERY_POLICY);
  private snsChaos: SnsChaos | null = null;
  private liePostingList: WebhookLiePosting[] = [];
  private pool: Pool | null = null;
  private poolUrl: string | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private list: WebhookDeliveryRecord[] = [];
  private eventNumber = 0;
  private closed = false;

  readonly mailgunSigningKey = DEFAULT_MAILGUN_SIGNING_KEY;
  /** SES's events go out through it, signed with its test certificate (sns.ts). */
  readonly sns = new SandboxSns();

  constructor(
    initial: Partial<WebhookSettings>,
    private readonly seed: number,
  ) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    this.sendgridPrivateKey = pair.privateKey;
    this.sendgridPublicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    this.settings = {
      url: initial.url ?? null,
      delayMs: initial.delayMs ?? DEFAULT_WEBHOOK_DELAY_MS,
      duplicateProbability: initial.duplicateProbability ?? 0,
      lossProbability: initial.lossProbability ?? 0,
      lieProbability: initial.lieProbability ?? 0,
      lieKinds: initial.lieKinds ?? [...WEBHOOK_LIE_KINDS],
    };
    checkSettings(this.settings);
    this.random = seededRandom(seed);
    this.lieRandom = seededRandom(seed ^ 0x11e5);
  }

  configure(changes: Partial<WebhookSettings>): void {
    const next = { ...this.settings };
    for (const [name, value] of Object.entries(changes)) {
      if (value !== undefined) (next as Record<string, unknown>)[name] = value;
    }
    checkSettings(next);
    this.settings = next;
  }

  /** The lies told so far, by kind, with how the receiver answered them. */
  lies(): Record<WebhookLieKind | SesLieKind, WebhookLieCount> {
    return structuredClone(this.lieCounts);
  }

  /** SES: the delays before SNS's retries (default: the documented delivery policy's, 59 a minute apart). */
  setSnsRetryDelays(delaysMs: number[]): void {
    this.snsRetryDelaysMs = [...delaysMs];
  }

  /** SES: tell SNS lies (snsLies.ts) after taken messages (lieProbability) and sends not taken. */
  configureSnsChaos(chaos: SnsChaos | null): void {
    this.snsChaos = chaos;
  }

  /** Every posting a lie made (a replay's genuine first posting included), with the receiver's answer. */
  liePostings(): WebhookLiePosting[] {
    return this.liePostingList.map((posting) => ({ ...posting, eventIds: [...posting.eventIds] }));
  }

  /** Every posting so far, retries and duplicates included. */
  deliveries(): WebhookDeliveryRecord[] {
    return this.list.map((record) => ({ ...record }));
  }

  /** The SendGrid signature of `payload` at `timestamp` (seconds), for tests that post by hand. */
  signSendGrid(payload: string, timestamp: number): string {
    return sign('sha256', Buffer.from(`${timestamp}${payload}`, 'utf8'), this.sendgridPrivateKey).toString(
      'base64',
    );
  }

  /** Called for every message the sandbox accepted. */
  onAccepted(message: ReceivedMessage): void {
    if (this.closed || this.settings.url === null) return;
    if (message.provider !== 'sendgrid' && message.provider !== 'mailgun' && message.provider !== 'ses')
      return;
    const bounces = /^bounce/i.test(message.to);
    const events =
      message.provider === 'sendgrid'
        ? [
            this.sendGridEvent(message, 'processed'),
            this.sendGridEvent(message, bounces ? 'bounce' : 'delivered'),
          ]
        : message.provider === 'ses'
          ? [this.sesEvent(message, 'Send'), this.sesEvent(message, bounces ? 'Bounce' : 'Delivery')]
          : [
              this.mailgunEvent(message, 'accepted'),
              this.mailgunEvent(message, bounces ? 'failed' : 'delivered'),
            ];
    events.forEach((event, index) => {
      // One draw each, whatever happens, so the sequence depends on the seed and the order of messages only.
      const lost = this.random() < this.settings.lossProbability;
      const duplicated = this.random() < this.settings.duplicateProbability;
      if (lost) return;
      const at = this.settings.delayMs * (index + 1);
      this.later(at, () => this.post(event, false, 1, Date.now()));
      if (duplicated)
        this.later(at + Math.max(this.settings.delayMs, 50), () => this.post(event, true, 1, Date.now()));
    });
    // Lies are told about orders only: a message that is no order's (a witness probe to the sink) gets none.
    if (!ORDER_ID.test(message.orderId)) return;
    if (message.provider === 'ses') {
      if (this.snsChaos !== null && this.lieRandom() < this.settings.lieProbability)
        this.tellSnsLie(message, false);
      return;
    }
    if (this.settings.lieProbability > 0 && this.lieRandom() < this.settings.lieProbability) {
      const kinds = this.settings.lieKinds;
      const kind = kinds[Math.floor(this.lieRandom() * kinds.length)] ?? kinds[0]!;
      this.later(this.settings.delayMs * 3, () => this.tellLie(kind, message));
    }
  }

  /** Called for every send the provider answered without taking it (records.ts). */
  onNotTaken(message: ReceivedMessage): void {
    if (this.closed || this.settings.url === null || message.provider !== 'ses' || this.snsChaos === null)
      return;
    if (!ORDER_ID.test(message.orderId)) return;
    if (this.lieRandom() < this.snsChaos.notTakenLieProbability) this.tellSnsLie(message, true);
  }

  private tellSnsLie(message: ReceivedMessage, aboutNotTaken: boolean): void {
    const kind = SES_LIE_KINDS[Math.floor(this.lieRandom() * SES_LIE_KINDS.length)] ?? SES_LIE_KINDS[0];
    // Soon after the send: well inside the workers' settle delay, where a believed lie would settle it.
    this.later(this.settings.delayMs * 3, () => this.postSnsLie(kind, message, aboutNotTaken));
  }

  private async postSnsLie(
    kind: SesLieKind,
    message: ReceivedMessage,
    aboutNotTaken: boolean,
  ): Promise<void> {
    const url = this.settings.url;
    const chaos = this.snsChaos;
    if (url === null || this.closed || chaos === null) return;
    const request = chaos.forger.lie(kind, message, this.sns, new Date(), chaos.staleByMs);
    const answer = lieAnswer(kind, await this.postOnce(url, 'ses', { ...request, isLie: true }));
    this.liePostingList.push({
      kind,
      orderId: message.orderId,
      isLie: true,
      eventIds: request.eventIds,
      token: request.token,
      answer,
      sendKey: message.sendKey,
      aboutNotTaken,
    });
    const count = this.lieCounts[kind];
    count.posted += 1;
    count[answer] += 1;
  }

  private async tellLie(kind: WebhookLieKind, message: ReceivedMessage): Promise<void> {
    const url = this.settings.url;
    if (url === null || this.closed) return;
    const signing = {
      signSendGrid: (p: string, t: number) => this.signSendGrid(p, t),
      mailgunSigningKey: this.mailgunSigningKey,
    };
    let genuineFailed = false;
    for (const request of lieRequests(kind, message, signing, new Date())) {
      const answer = lieAnswer(
        kind,
        await this.postOnce(url, message.provider as 'sendgrid' | 'mailgun', request),
      );
      // A replay is a lie only about a posting the receiver answered. One it failed (a 5xx while its database
      // restarted) left it nothing to remember, and the same bytes again are, to it, a provider's retry of a
      // genuine event: storing them is right, and judging that as a believed lie failed the chaos run. (A
      // genuine first it refused, then believed again, still counts: that would be the receiver's fault.)
      const isLie = request.isLie && !genuineFailed;
      if (!request.isLie) genuineFailed = answer === 'failed';
      this.liePostingList.push({
        kind,
        orderId: message.orderId,
        isLie,
        eventIds: request.eventIds,
        token: request.token,
        answer,
      });
      if (!isLie) continue;
      const count = this.lieCounts[kind];
      count.posted += 1;
      count[answer] += 1;
    }
  }

  /** One posting, not retried: a lie is told once. */
  private async postOnce(
    url: string,
    provider: 'sendgrid' | 'mailgun' | 'ses',
    request: LieRequest,
  ): Promise<LieHttpAnswer> {
    try {
      const response = await this.poolFor(url).request({
        method: 'POST',
        path: `${new URL(url).pathname.replace(/\/+$/, '')}/webhooks/${provider}`,
        headers: { 'content-type': 'application/json', ...request.headers },
        body: request.body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      const text = await response.body.text();
      let stored = 0;
      try {
        stored = Number((JSON.parse(text) as { stored?: unknown }).stored ?? 0) || 0;
      } catch {
        // not JSON: nothing stored that we can see
      }
      return { status: response.statusCode, stored };
    } catch {
      return 'reset';
    }
  }

  /** Resolves once every posting planned so far has been made (retries included). */
  async settled(): Promise<void> {
    while (this.timers.size > 0 || this.inFlight.size > 0) {
      await Promise.allSettled([...this.inFlight]);
      if (this.timers.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  reset(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.list = [];
    this.random = seededRandom(this.seed);
    this.lieRandom = seededRandom(this.seed ^ 0x11e5);
    this.lieCounts = emptyLieCounts();
    this.liePostingList = [];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
    await this.pool?.close().catch(() => undefined);
  }

  private later(ms: number, work: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closed) return;
      const running = work().finally(() => this.inFlight.delete(running));
      this.inFlight.add(running);
    }, ms);
    this.timers.add(timer);
  }

  private async post(
    event: PlannedEvent,
    duplicate: boolean,
    attempt: number,
    firstPostedAt: number,
  ): Promise<void> {
    const url = this.settings.url;
    if (url === null || this.closed) return;
    const { body, headers } = event.body(new Date());
    let status: number | 'failed';
    try {
      const response = await this.poolFor(url).request({
        method: 'POST',
        path: `${new URL(url).pathname.replace(/\/+$/, '')}/webhooks/${event.provider}`,
        headers: { 'content-type': 'application/json', ...headers },
        body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      status = response.statusCode;
      await response.body.dump();
    } catch {
      status = 'failed';
    }
    this.list.push({
      sequence: this.list.length + 1,
      provider: event.provider,
      orderId: event.orderId,
      eventId: event.eventId,
      eventType: event.eventType,
      duplicate,
      attempt,
      status,
      postedAt: new Date().toISOString(),
      lateByMs: Date.now() - firstPostedAt,
    });
    // Like the providers: a refusal (4xx other than 429) is final, anything else is tried again later; SNS
    // as its delivery policy says.
    const retry = status === 'failed' || status === 429 || status >= 500;
    const delay = (event.provider === 'ses' ? this.snsRetryDelaysMs : RETRY_DELAYS_MS)[attempt - 1];
    if (retry && delay !== undefined)
      this.later(delay, () => this.post(event, duplicate, attempt + 1, firstPostedAt));
  }

  private poolFor(url: string): Pool {
    const origin = new URL(url).origin;
    if (this.pool === null || this.poolUrl !== origin) {
      void this.pool?.close().catch(() => undefined);
      this.pool = new Pool(origin, {
        connections: 4,
        headersTimeout: DELIVERY_TIMEOUT_MS,
        bodyTimeout: DELIVERY_TIMEOUT_MS,
      });
      this.poolUrl = origin;
    }
    return this.pool;
  }

  private sendGridEvent(message: ReceivedMessage, event: 'processed' | 'delivered' | 'bounce'): PlannedEvent {
    this.eventNumber += 1;
    const eventId = `sbx-sg-${this.eventNumber}`;
    const occurred = Math.floor(Date.now() / 1000);
    const payload = [
      {
        email: message.to,
        timestamp: occurred,
        event,
        sg_event_id: eventId,
        // SendGrid's sg_message_id is the send's X-Message-Id followed by a suffix.
        sg_message_id: `${message.id}.sbx-filter-0`,
        order_id: message.orderId,
        ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
        ...(event === 'bounce'
          ? { type: 'bounce', status: '5.1.1', reason: `550 5.1.1 <${message.to}>: mailbox does not exist` }
          : {}),
      },
    ];
    const body = JSON.stringify(payload);
    return {
      provider: 'sendgrid',
      orderId: message.orderId,
      eventId,
      eventType: event,
      body: (now) => {
        const timestamp = Math.floor(now.getTime() / 1000);
        return {
          body,
          headers: {
            'x-twilio-email-event-webhook-signature': this.signSendGrid(body, timestamp),
            'x-twilio-email-event-webhook-timestamp': String(timestamp),
          },
        };
      },
    };
  }

  /**
   * An SES event as SNS delivers it. The notification is made and signed once: SNS retries and redelivers the
   * very same message (same MessageId, Timestamp and signature), which the receiver takes once.
   */
  private sesEvent(message: ReceivedMessage, eventType: 'Send' | 'Delivery' | 'Bounce'): PlannedEvent {
    let made: { body: string; headers: Record<string, string> } | null = null;
    // The notification's MessageId, which the receiver stores as the event's id.
    const eventId = randomUUID();
    return {
      provider: 'ses',
      orderId: message.orderId,
      eventId,
      eventType,
      body: (now) => {
        if (made === null) {
          const notification = this.sns.notification(this.sns.sesEvent(message, eventType, now), {
            timestamp: now,
            messageId: eventId,
          });
          made = { body: JSON.stringify(notification), headers: this.sns.headers(notification) };
        }
        return made;
      },
    };
  }

  private mailgunEvent(message: ReceivedMessage, event: 'accepted' | 'delivered' | 'failed'): PlannedEvent {
    this.eventNumber += 1;
    const eventId = `sbx-mg-${this.eventNumber}`;
    const eventData = {
      event,
      id: eventId,
      timestamp: Date.now() / 1000,
      recipient: message.to,
      message: { headers: { 'message-id': message.id.replace(/^<|>$/g, '') } },
      'user-variables': {
        order_id: message.orderId,
        ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
      },
      ...(event === 'failed'
        ? {
            severity: 'permanent',
            reason: 'bounce',
            'delivery-status': { code: 550, message: `550 5.1.1 <${message.to}>: mailbox does not exist` },
          }
        : {}),
    };
    return {
      provider: 'mailgun',
      orderId: message.orderId,
      eventId,
      eventType: event,
      // Each posting is signed anew: a fresh token and timestamp, as Mailgun does for every request.
      body: (now) => {
        const timestamp = String(Math.floor(now.getTime() / 1000));
        const token = randomBytes(25).toString('hex');
        const signature = {
          timestamp,
          token,
          signature: mailgunSignature(this.mailgunSigningKey, timestamp, token),
        };
        return { body: JSON.stringify({ signature, 'event-data': eventData }), headers: {} };
      },
    };
  }
}

function checkSettings(settings: WebhookSettings): void {
  if (settings.url !== null) {
    try {
      const parsed = new URL(settings.url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
    } catch {
      throw new InvalidFaultError('webhooks: url must be an http(s) URL or null.');
    }
  }
  if (!Number.isInteger(settings.delayMs) || settings.delayMs < 0) {
    throw new InvalidFaultError('webhooks: delayMs must be an integer >= 0.');
  }
  if (
    !Array.isArray(settings.lieKinds) ||
    settings.lieKinds.length === 0 ||
    settings.lieKinds.some((kind) => !WEBHOOK_LIE_KINDS.includes(kind))
  ) {
    throw new InvalidFaultError(
      `webhooks: lieKinds must be a non-empty list of ${WEBHOOK_LIE_KINDS.join(', ')}.`,
    );
  }
  for (const name of ['duplicateProbability', 'lossProbability', 'lieProbability'] as const) {
    const value = settings[name];
    if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
      throw new InvalidFaultError(`webhooks: ${name} must be a number from 0 to 1.`);
    }
  }
}
