// A real HTTP server speaking the mail API, with faults injected on purpose: the demo and the tests send to
// it exactly as they would to a provider, then read back what it actually accepted.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CONTROL_PREFIX, handleControlRequest, type SandboxControls } from './controlApi';
import {
  FaultChooser,
  InvalidFaultError,
  parseFault,
  parseFaultPlan,
  type Fault,
  type FaultPlan,
} from './faults';
import { readBody, sendJson } from './httpIo';
import { IdempotencyStore, RESEND_IDEMPOTENCY_WINDOW_MS } from './idempotencyStore';
import type { LookupLieKind } from './lookupLies';
import { SandboxLookups, type LookupFault, type LookupRecord, type LookupSettings } from './lookups';
import { handleMailApiRequest, type MailApiContext } from './mailApi';
import { emulationForPath, lookupEmulationForPath } from './providers';
import type { WebhookLieCount, WebhookLieKind, WebhookLiePosting } from './webhookLies';
import type { SesLieKind } from './snsLies';
import { SandboxWebhooks, type SnsChaos, type WebhookDeliveryRecord, type WebhookSettings } from './webhooks';
import { SandboxSns, SNS_PATH_PREFIX } from './sns';
import { SandboxRecords, type ReceivedMessage, type RequestRecord } from './records';
import { RefusalWindow, listen } from './refusalWindow';
import { relayComposedMessage, type RelayTarget } from './relayToInbox';

export interface MailSandboxOptions {
  /** Default 127.0.0.1: the control API has no authentication. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  apiKey?: string;
  faultPlan?: FaultPlan;
  seed?: number;
  /** How long the Resend emulation remembers an idempotency key. Default 24 h, as Resend documents. */
  idempotencyWindowMs?: number;
  /** The sandbox's clock, for tests that step past the idempotency window. Default: the real clock. */
  now?: () => Date;
  /**
   * Relay every accepted message (accept-then-drop and accept-then-hang included: the provider took those) to
   * this SMTP server, e.g. MailDev from dev/devtools/mailDev.ts. Rejected or unprocessed requests never are.
   */
  relayTo?: RelayTarget;
  /** How long an accepted message takes to show in lookups, and how long it stays there (lookups.ts). */
  lookups?: Partial<LookupSettings>;
  /** Where and how the SendGrid and Mailgun emulations post their signed events (webhooks.ts). */
  webhooks?: Partial<WebhookSettings>;
}

export interface MailSandbox extends SandboxControls {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:4010`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening (clients get ECONNREFUSED) for `ms`, then listens again on the same port. */
  refuseConnectionsFor(ms: number): Promise<void>;
  /** Resolves once the sandbox accepts connections (at once, unless it is refusing them). */
  whenListening(): Promise<void>;
  /** Answers every held request now; returns how many were answered. */
  releaseHeld(): number;
  /** Forgets messages, requests, queued faults and the fault plan; answers held requests. */
  reset(): void;
  /** Resolves once every relay to the inbox started so far has finished. */
  relaysSettled(): Promise<void>;
  /** SendGrid's webhook verification key (base64 DER) and Mailgun's signing key, for the receiver's config. */
  readonly webhookKeys: { sendgridPublicKey: string; mailgunSigningKey: string };
  /** Signs a SendGrid webhook body as the emulation does, for tests that post by hand. */
  signSendGridWebhook(payload: string, timestampSeconds: number): string;
  /** Resolves once every webhook posting planned so far was made. */
  webhooksSettled(): Promise<void>;
  /** SNS as SES's events reach the receiver: its topic, its test certificate's URL, messages signed by hand. */
  readonly sns: SandboxSns;
  /** SES: the delays before SNS's retries of an event (default: the documented delivery policy's). */
  setSnsRetryDelays(delaysMs: number[]): void;
  /** SES: SNS lies after taken messages and sends not taken (snsLies.ts); null stops them. */
  configureSnsChaos(chaos: SnsChaos | null): void;
  /**
   * The account's valid keys from now on, as a provider's key rotation has them: the new one added beside the
   * old, later the old one revoked (requests with a key not listed get the provider's 401).
   */
  setApiKeys(keys: readonly string[]): void;
  /** Drops every connection, held ones included, and stops listening. Idempotent. */
  close(): Promise<void>;
}

export class SandboxClosedError extends Error {
  override readonly name = 'SandboxClosedError';
  readonly code = 'ERR_SANDBOX_CLOSED';
}

export const DEFAULT_SANDBOX_API_KEY = 'sandbox-key';
const DEFAULT_SEED = 1;

export async function startMailSandbox(options: MailSandboxOptions = {}): Promise<MailSandbox> {
  const faults = new FaultChooser(options.seed ?? DEFAULT_SEED);
  if (options.faultPlan !== undefined) faults.setPlan(parseFaultPlan(options.faultPlan));
  const seed = options.seed ?? DEFAULT_SEED;
  const sandbox = new MailSandboxServer(
    options.host ?? '127.0.0.1',
    options.apiKey ?? DEFAULT_SANDBOX_API_KEY,
    faults,
    new IdempotencyStore(options.idempotencyWindowMs ?? RESEND_IDEMPOTENCY_WINDOW_MS),
    options.now ?? (() => new Date()),
    new SandboxLookups(options.lookups ?? {}, seed),
    new SandboxWebhooks(options.webhooks ?? {}, seed),
  );
  if (options.relayTo !== undefined) sandbox.relayAcceptedTo(options.relayTo);
  await sandbox.start(options.port ?? 0);
  return sandbox;
}

interface HeldResponse {
  res: ServerResponse;
  answer: () => void;
  timer: NodeJS.Timeout | null;
}

class MailSandboxServer implements MailSandbox {
  private readonly server: Server;
  private readonly records = new SandboxRecords();
  private readonly held = new Set<HeldResponse>();
  private readonly mailApiContext: MailApiContext;
  private boundPort = 0;
  private readonly refusal: RefusalWindow;
  private closing: Promise<void> | null = null;
  private readonly relays = new Set<Promise<void>>();

  constructor(
    private readonly host: string,
    apiKey: string,
    private readonly faults: FaultChooser,
    private readonly idempotency: IdempotencyStore,
    private readonly now: () => Date,
    private readonly lookupEmulation: SandboxLookups,
    private readonly webhooks: SandboxWebhooks,
  ) {
    this.server = createServer((req, res) => this.route(req, res));
    this.records.onAccepted((message) => this.webhooks.onAccepted(message));
    this.records.onNotTaken((message) => this.webhooks.onNotTaken(message));
    this.refusal = new RefusalWindow(this.server, {
      host,
      port: () => this.boundPort,
      // Closing the listener already closes idle keep-alive sockets (Node >= 19), so a pooled client cannot
      // slip past the refusal on an old connection; said again here for clarity. Requests in flight finish.
      cutSessions: () => this.server.closeIdleConnections(),
      closedError: () => new SandboxClosedError('The mail sandbox is closed.'),
      invalidError: (message) => new InvalidFaultError(message),
    });
    this.mailApiContext = {
      apiKeys: [apiKey],
      records: this.records,
      faults,
      idempotency,
      hold: (res, answer, ms) => this.hold(res, answer, ms),
      now,
    };
  }

  get port(): number {
    return this.boundPort;
  }

  setApiKeys(keys: readonly string[]): void {
    if (keys.length === 0) throw new InvalidFaultError('an account keeps at least one key');
    this.mailApiContext.apiKeys = [...keys];
  }

  get url(): string {
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    return `http://${host}:${this.boundPort}`;
  }

  async start(port: number): Promise<void> {
    await listen(this.server, port, this.host);
    const address = this.server.address();
    if (address === null || typeof address === 'string') {
      throw new Error('The mail sandbox is not on a TCP port.');
    }
    this.boundPort = address.port;
    this.webhooks.sns.setOrigin(this.url);
  }

  get sns(): SandboxSns {
    return this.webhooks.sns;
  }

  messages(): ReceivedMessage[] {
    return this.records.messages();
  }

  messagesFor(orderId: string): ReceivedMessage[] {
    return this.records.messages(orderId);
  }

  requests(): RequestRecord[] {
    return this.records.requests();
  }

  lookups(): LookupRecord[] {
    return this.lookupEmulation.records();
  }

  configureLookups(settings: Partial<LookupSettings>): void {
    this.lookupEmulation.configure(settings);
  }

  queueLookupFault(orderId: string, fault: LookupFault, times = 1): void {
    this.lookupEmulation.queueFault(orderId, fault, times);
  }

  setLookupFaultPlan(rates: { fault: LookupFault; probability: number }[], seed?: number): void {
    this.lookupEmulation.setPlan(rates, seed);
  }

  /** Turns the lookups' lies on (lookupLies.ts); reset() turns them off. */
  setLookupLies(plan: unknown): void {
    this.lookupEmulation.lies.setPlan(plan);
  }

  /**
   * Makes the lookups' index show some sends late and later ones at once
   * (lookupReorder.ts); null (or reset()) stops it.
   */
  setLookupReorder(plan: unknown): void {
    this.lookupEmulation.reorder.setPlan(plan);
  }

  /** How many lookups told each kind of lie since the last reset. */
  lookupLiesTold(): Record<LookupLieKind, number> {
    return this.lookupEmulation.lies.told();
  }

  webhookDeliveries(): WebhookDeliveryRecord[] {
    return this.webhooks.deliveries();
  }

  /** The webhook lies told so far (lieProbability > 0), by kind, with how the receiver answered each. */
  webhookLies(): Record<WebhookLieKind | SesLieKind, WebhookLieCount> {
    return this.webhooks.lies();
  }

  setSnsRetryDelays(delaysMs: number[]): void {
    this.webhooks.setSnsRetryDelays(delaysMs);
  }

  configureSnsChaos(chaos: SnsChaos | null): void {
    this.webhooks.configureSnsChaos(chaos);
  }

  /** Every posting the webhook lies made, with the receiver's answer (for the chaos report's row check). */
  webhookLiePostings(): WebhookLiePosting[] {
    return this.webhooks.liePostings();
  }

  configureWebhooks(settings: Partial<WebhookSettings>): void {
    this.webhooks.configure(settings);
  }

  get webhookKeys(): { sendgridPublicKey: string; mailgunSigningKey: string } {
    return {
      sendgridPublicKey: this.webhooks.sendgridPublicKey,
      mailgunSigningKey: this.webhooks.mailgunSigningKey,
    };
  }

  signSendGridWebhook(payload: string, timestampSeconds: number): string {
    return this.webhooks.signSendGrid(payload, timestampSeconds);
  }

  webhooksSettled(): Promise<void> {
    return this.webhooks.settled();
  }

  queueFault(orderId: string, fault: Fault, times = 1): void {
    this.faults.queue(orderId, parseFault(fault), times);
  }

  setFaultPlan(plan: FaultPlan): void {
    this.faults.setPlan(parseFaultPlan(plan));
  }

  refuseConnectionsFor(ms: number): Promise<void> {
    return this.refusal.refuseFor(ms);
  }

  whenListening(): Promise<void> {
    return this.refusal.whenListening();
  }

  releaseHeld(): number {
    let answered = 0;
    for (const entry of [...this.held]) if (this.answerHeld(entry)) answered += 1;
    // Releasing means the provider finished processing, including requests whose client already gave up.
    this.idempotency.finishAll(this.now().getTime());
    return answered;
  }

  reset(): void {
    this.releaseHeld();
    this.records.reset();
    this.faults.reset();
    this.idempotency.reset();
    this.lookupEmulation.reset();
    this.webhooks.reset();
  }

  relayAcceptedTo(target: RelayTarget): void {
    this.records.onAccepted((message) => {
      const relaying = relayComposedMessage(target, {
        orderId: message.orderId,
        from: message.from,
        to: [message.to],
        subject: message.subject,
        text: message.text,
        html: message.html,
      })
        .then(() => undefined)
        .finally(() => this.relays.delete(relaying));
      this.relays.add(relaying);
    });
  }

  async relaysSettled(): Promise<void> {
    while (this.relays.size > 0) await Promise.allSettled([...this.relays]);
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.refusal.close();
    await this.webhooks.close();
    // Answer first, so a held request ends as a response rather than as an unanswered socket where we can.
    this.releaseHeld();
    const stopped = this.server.listening
      ? new Promise<void>((resolve) => this.server.close(() => resolve()))
      : Promise.resolve();
    // Held and keep-alive sockets would otherwise keep the process (and server.close) waiting.
    this.server.closeAllConnections();
    await stopped;
  }

  private hold(res: ServerResponse, answer: () => void, ms: number | undefined): void {
    const entry: HeldResponse = { res, answer, timer: null };
    this.held.add(entry);
    if (ms !== undefined) entry.timer = setTimeout(() => this.answerHeld(entry), ms);
    // The client gave up (headers timeout, abort): nothing left to answer, and the record stays 'hung'.
    res.on('close', () => this.forgetHeld(entry));
  }

  private answerHeld(entry: HeldResponse): boolean {
    if (!this.forgetHeld(entry)) return false;
    if (entry.res.destroyed || entry.res.socket === null || entry.res.socket.destroyed) return false;
    entry.answer();
    return true;
  }

  private forgetHeld(entry: HeldResponse): boolean {
    if (entry.timer !== null) clearTimeout(entry.timer);
    return this.held.delete(entry);
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    } catch {
      return sendJson(res, 400, { error: 'bad request target' });
    }
    let handling: Promise<void>;
    const emulation = emulationForPath(url.pathname);
    const lookup = req.method === 'GET' ? lookupEmulationForPath(url.pathname) : null;
    if (url.pathname.startsWith(SNS_PATH_PREFIX) && this.webhooks.sns.handle(req, res, url)) {
      return;
    }
    if (url.pathname.startsWith(CONTROL_PREFIX)) {
      handling = handleControlRequest(req, res, url, this);
    } else if (emulation !== null && req.method === 'POST') {
      handling = handleMailApiRequest(req, res, url.pathname, emulation, this.mailApiContext);
    } else if (lookup !== null) {
      handling = this.lookupEmulation.handle(req, res, url, lookup, {
        apiKeys: this.mailApiContext.apiKeys,
        records: this.records,
        hold: (held, answer, ms) => this.hold(held, answer, ms),
        now: this.now,
      });
    } else {
      handling = this.answerUnrouted(req, res, url.pathname);
    }
    handling.catch((error: unknown) => {
      // A sandbox bug must show up as a 500 in the test that hit it, not as a crashed process.
      console.error('mail sandbox: request handler failed:', error);
      if (!res.headersSent) sendJson(res, 500, { error: 'sandbox internal error' });
      else res.destroy();
    });
  }

  private async answerUnrouted(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const reading = await readBody(req);
    if (reading.kind === 'client-gone') return;
    const provider = emulationForPath(path)?.name ?? null;
    const status = provider !== null ? 405 : 404;
    this.records.addRequest(
      {
        method: req.method ?? 'UNKNOWN',
        path,
        provider,
        idempotencyKey: null,
        replayed: false,
        orderId: null,
        fault: null,
        status,
        messageId: null,
        remotePort: req.socket.remotePort ?? null,
      },
      this.now(),
    );
    if (status === 405) sendJson(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
    else sendJson(res, 404, { error: 'not found' });
  }
}
