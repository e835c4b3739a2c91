// The freshness witness's query (src/db/freshnessWitness.ts) against a real Postgres: of the sends we know were
// accepted to the same destination, only one whose request left after the attempt had ended (its dispatch plus
// its recorded send timeout) is a witness; under Mailgun's threshold, only one that had ended that long before
// the lookup. The bounds are witnessBounds' (src/evidence/freshnessCheck.ts), on Postgres's clock.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findWitnessCandidate } from '../../src/db/freshnessWitness';
import type { DispatchedAttempt } from '../../src/evidence/evidenceRules';
import { witnessBounds, type WitnessOrdering } from '../../src/evidence/freshnessCheck';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('witness_query');
}, 60_000);
afterAll(async () => {
  await database?.close();
});
beforeEach(async () => {
  await database.db.query('DELETE FROM order_mail_log');
});

const destination = {
  provider: 'mailgun',
  origin: 'https://api.mailgun.net',
  scope: 'mg.example.com',
  credentialFingerprint: null,
};
const SEND_TIMEOUT_MS = 8_000;

/** Postgres's now(), and the attempt asked about: dispatched `agoMs` before it, with an 8 s send timeout. */
async function attemptDispatched(agoMs: number): Promise<{ attempt: DispatchedAttempt; now: Date }> {
  const { rows } = await database.db.query<{ now: Date; dispatchedAt: Date }>(
    `SELECT now() AS now, now() - make_interval(secs => $1::double precision / 1000) AS "dispatchedAt"`,
    [agoMs],
  );
  const { now, dispatchedAt } = rows[0]!;
  return {
    now,
    attempt: {
      orderId: '0',
      attempt: 1,
      sendKey: 'order-confirmation/default/0/0',
      destination,
      dispatchedAt,
      sendTimeoutMs: SEND_TIMEOUT_MS,
      keyFirstDispatchedAt: dispatchedAt,
    },
  };
}

/** A send to the destination that got its 2xx, its request left at `leftAt` (Postgres's clock). */
async function acceptedSend(leftAt: Date, sendTimeoutMs: number | null = SEND_TIMEOUT_MS): Promise<string> {
  const { rows } = await database.db.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
     VALUES ('w', 'w@example.com', 'confirmed', $1) RETURNING id::text`,
    [leftAt],
  );
  const id = rows[0]!.id;
  await database.db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, dispatched_at,
                                 outcome, http_status, dispatch_provider, dispatch_origin, dispatch_scope,
                                 dispatch_send_key, dispatch_send_timeout_ms)
     VALUES ($1::bigint, 'sent', 1, 'default/' || $1::text || '/run', $2, $2, $2, 'accepted', 200, $3, $4, $5,
             'order-confirmation/default/' || $1::text || '/0', $6)`,
    [id, leftAt, destination.provider, destination.origin, destination.scope, sendTimeoutMs],
  );
  return id;
}

const at = (attempt: DispatchedAttempt, ms: number) => new Date(attempt.dispatchedAt.getTime() + ms);

async function witnessFor(attempt: DispatchedAttempt, now: Date, ordering: WitnessOrdering) {
  const bounds = witnessBounds({
    attempt,
    timing: { settleDelayMs: 0, retentionMs: null, fallbackSendTimeoutMs: SEND_TIMEOUT_MS },
    ordering,
    now,
  });
  return findWitnessCandidate(database.db, { orderId: attempt.orderId, destination, bounds });
}

describe('findWitnessCandidate', () => {
  it('a send accepted while the attempt was on the wire is no witness; the first that left after its end is', async () => {
    const { attempt, now } = await attemptDispatched(60_000);
    await acceptedSend(at(attempt, 500));
    await acceptedSend(at(attempt, SEND_TIMEOUT_MS - 1));
    expect(await witnessFor(attempt, now, { kind: 'taken-order' })).toBeNull();
    const after = await acceptedSend(at(attempt, SEND_TIMEOUT_MS + 5));
    await acceptedSend(at(attempt, SEND_TIMEOUT_MS + 2_000));
    expect(await witnessFor(attempt, now, { kind: 'taken-order' })).toMatchObject({
      orderId: after,
      sendTimeoutMs: SEND_TIMEOUT_MS,
    });
  });

  it('a send whose own send timeout was not recorded cannot be placed, so it is no witness', async () => {
    const { attempt, now } = await attemptDispatched(60_000);
    await acceptedSend(at(attempt, 20_000), null);
    expect(await witnessFor(attempt, now, { kind: 'taken-order' })).toBeNull();
  });

  it('Mailgun: a witness that ended inside the threshold before the lookup does not count; older, it does', async () => {
    const THRESHOLD_MS = 30 * 60_000;
    const mailgun: WitnessOrdering = { kind: 'trusted-after', afterMs: THRESHOLD_MS };
    const { attempt, now } = await attemptDispatched(60 * 60_000);
    // Left 20 min ago: after the attempt's end, but not yet trustworthy.
    await acceptedSend(new Date(now.getTime() - 20 * 60_000));
    expect(await witnessFor(attempt, now, mailgun)).toBeNull();
    // Left 31 min ago, but its 2xx may have come as late as its 2 min send timeout: ended 29 min ago.
    const slow = await acceptedSend(new Date(now.getTime() - 31 * 60_000), 120_000);
    expect(await witnessFor(attempt, now, mailgun)).toBeNull();
    // Ended 30 min 2 s ago: past the threshold.
    const old = await acceptedSend(new Date(now.getTime() - THRESHOLD_MS - SEND_TIMEOUT_MS - 2_000));
    expect(await witnessFor(attempt, now, mailgun)).toMatchObject({ orderId: old });
    // The same sends under an in-order lookup: the earliest after the attempt's end.
    expect(await witnessFor(attempt, now, { kind: 'taken-order' })).toMatchObject({ orderId: slow });
  });
});
