// Test-sized verification: a verifier over the sandbox's emulation of a provider, the workflow settings that
// go with it, and the attempts and row as the log records their verification.
import { Context } from '@temporalio/activity';
import type { SendOrderMailInput } from '../../src/activities';
import { MAIL_PROVIDER_FACTS, type MailProviderName } from '../../src/mail/providers/mailProvider';
import type { Database } from '../../src/db/pool';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { createVerifier, type Verifier } from '../../src/verification/verifier';
import { TEST_MAILGUN_DOMAIN, testSesSettings } from './testKit';

export interface TestVerification {
  /** What the workflow waits and how long it keeps asking. */
  settings: VerificationSettings;
  /** The settle delay the activity holds a "not found" to (normally the same as the workflow's timer). */
  evidenceAfterMs?: number;
  retentionMs?: number | null;
}

/** A verifier for `provider` at `baseUrl` (the sandbox); close() closes its lookup pool. */
export function testVerifier(
  provider: MailProviderName,
  baseUrl: string,
  verification: TestVerification,
): { verifier: Verifier; close(): Promise<void> } {
  const facts = MAIL_PROVIDER_FACTS[provider].verification;
  if (facts === null) throw new Error(`${provider} cannot verify`);
  return createVerifier(
    {
      facts,
      settleDelayMs: verification.evidenceAfterMs ?? verification.settings.settleDelayMs,
      settleDelayOverrideReason: 'test-sized: the sandbox indexes within its configured lag',
      retentionMs: verification.retentionMs === undefined ? facts.retentionMs : verification.retentionMs,
      lookupTimeoutMs: verification.settings.lookupTimeoutMs,
      deadlineMs: verification.settings.deadlineMs,
      connections: 2,
    },
    {
      provider,
      baseUrl,
      apiKey: 'sandbox-key',
      mailgunDomain: TEST_MAILGUN_DOMAIN,
      postmarkMessageStream: 'outbound',
      ses: testSesSettings(),
      connectTimeoutMs: 1_000,
      headersTimeoutMs: 1_000,
      overallTimeoutMs: 3_000,
      connections: 2,
    },
  );
}

export interface VerifiedAttempt {
  attempt: number;
  state: string;
  outcome: string;
  unknownPolicy: string | null;
  verification: string | null;
  providerMessageId: string | null;
  error: string | null;
}

export async function attemptsWithVerification(db: Database, orderId: string): Promise<VerifiedAttempt[]> {
  const { rows } = await db.query<VerifiedAttempt>(
    `SELECT attempt, state, outcome, unknown_policy AS "unknownPolicy", verification,
            provider_message_id AS "providerMessageId", error
       FROM order_mail_attempts WHERE order_id = $1 ORDER BY attempt`,
    [orderId],
  );
  return rows;
}

export async function rowWithVerification(db: Database, orderId: string) {
  const { rows } = await db.query<{
    state: string;
    outcome: string | null;
    verification: string | null;
    providerMessageId: string | null;
  }>(
    `SELECT state, outcome, verification, provider_message_id AS "providerMessageId"
       FROM order_mail_log WHERE order_id = $1`,
    [orderId],
  );
  return rows[0] ?? null;
}

/**
 * The send activity `send`, except that the first send of each order `holds` names is held after the real
 * send returned (or failed): its row is dispatched and never recorded, as under a worker that stalled
 * mid-send, until the worker shuts down and cancels it. For closing that run (a reset, a terminate) mid-send.
 */
export function holdingFirstSend<Result>(
  send: (input: SendOrderMailInput) => Promise<Result>,
  holds: (orderId: string) => boolean,
): (input: SendOrderMailInput) => Promise<Result> {
  const held = new Set<string>();
  return async (input) => {
    if (!holds(input.orderId) || held.has(input.orderId)) return send(input);
    held.add(input.orderId);
    await send(input).catch(() => undefined);
    return Context.current().cancelled;
  };
}

/**
 * The freshness witness a lookup's "not found" needs (src/evidence/freshnessCheck.ts): once `dispatched()`
 * says the attempt's request left, and its request has ended on Postgres's clock (its dispatch plus its recorded
 * send timeout: untilAttemptEnded), sends another order to its 2xx through the same destination (`sendWitness`),
 * so the lookup can show a known-accepted send that left after the attempt ended. Resolves with `running`'s
 * result.
 */
export async function withWitness<T>(
  running: Promise<T>,
  input: {
    dispatched: () => boolean;
    sendWitness: () => Promise<unknown>;
    db: Database;
    orderId: string;
  },
): Promise<T> {
  const deadline = Date.now() + 20_000;
  while (!input.dispatched()) {
    if (Date.now() > deadline) throw new Error('withWitness: the attempt never reached the provider');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await untilAttemptEnded(input.db, input.orderId);
  await input.sendWitness();
  return running;
}

/**
 * Waits until the order's dispatched attempt has ended on Postgres's clock: now() past its dispatch plus its
 * recorded send timeout. Only a send that leaves after that can witness it.
 */
export async function untilAttemptEnded(db: Database, orderId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { rows } = await db.query<{ ended: boolean }>(
      `SELECT now() > dispatched_at + dispatch_send_timeout_ms * interval '1 millisecond' AS ended
         FROM order_mail_log WHERE order_id = $1 AND dispatched_at IS NOT NULL`,
      [orderId],
    );
    if (rows[0]?.ended === true) return;
    if (Date.now() > deadline) throw new Error(`untilAttemptEnded: order ${orderId}'s attempt never ended`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
