// Witness probes in Postgres (migration 0058, src/db/witnessProbes.ts, src/db/freshnessWitness.ts): the fence
// records one probe per destination per interval, however many ask at once; the witness query takes an accepted
// probe by the same rule as a customer's send (it left after the attempt's end), and nothing else of a probe.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findWitnessCandidate } from '../../src/db/freshnessWitness';
import { passProbeFence, recordProbeAnswer, type ProbeDispatch } from '../../src/db/witnessProbes';
import type { SendDestination } from '../../src/evidence/destination';
import { witnessBounds } from '../../src/evidence/freshnessCheck';
import type { MailOutcome } from '../../src/shared/mailOutcome';
import { probeIdentity } from '../../src/verification/witnessProbe';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('witness_probes');
}, 60_000);
afterAll(async () => {
  await database?.close();
});
beforeEach(async () => {
  await database.db.query('TRUNCATE order_mail_witness_probes');
});

const postmark: SendDestination = {
  provider: 'postmark',
  origin: 'https://api.postmarkapp.com',
  scope: 'outbound',
  credentialFingerprint: 'sha256:0000000000000001',
};
const SEND_TIMEOUT_MS = 8_000;

function probe(destination: SendDestination = postmark): ProbeDispatch {
  return {
    ...probeIdentity('test', randomUUID()),
    destination,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    workerIdentity: 'test-worker',
  };
}

/** Fences a probe and records its answer; returns its probe id. */
async function answeredProbe(outcome: MailOutcome, httpStatus: number | null): Promise<string> {
  const dispatch = probe();
  expect(await passProbeFence(database.db, { probe: dispatch, intervalMs: 1 })).toBe('passed');
  await recordProbeAnswer(database.db, { probeId: dispatch.probeId, outcome, httpStatus, errorCode: null });
  return dispatch.probeId;
}

/** The witness of an attempt to `postmark` that ended `endedAgoMs` before Postgres's now() (taken-order). */
async function witnessOfAttemptEnded(endedAgoMs: number) {
  const { rows } = await database.db.query<{ now: Date }>('SELECT now() AS now');
  const now = rows[0]!.now;
  const dispatchedAt = new Date(now.getTime() - endedAgoMs - SEND_TIMEOUT_MS);
  const bounds = witnessBounds({
    attempt: {
      orderId: '1',
      attempt: 1,
      sendKey: 'order-confirmation/test/1/0',
      destination: postmark,
      dispatchedAt,
      sendTimeoutMs: SEND_TIMEOUT_MS,
      keyFirstDispatchedAt: dispatchedAt,
    },
    timing: { settleDelayMs: 0, retentionMs: null, fallbackSendTimeoutMs: SEND_TIMEOUT_MS },
    ordering: { kind: 'taken-order' },
    now,
  });
  return findWitnessCandidate(database.db, { orderId: '1', destination: postmark, bounds });
}

describe('the probe fence', () => {
  it('records one probe per destination however many ask at once, and refuses more within the interval', async () => {
    const asked = Array.from({ length: 12 }, () => probe());
    const passed = await Promise.all(
      asked.map((dispatch) => passProbeFence(database.db, { probe: dispatch, intervalMs: 60_000 })),
    );
    expect(passed.filter((fence) => fence === 'passed')).toHaveLength(1);
    expect(await passProbeFence(database.db, { probe: probe(), intervalMs: 60_000 })).toBe('rate-limited');
    // Another destination (another stream) has its own.
    expect(
      await passProbeFence(database.db, {
        probe: probe({ ...postmark, scope: 'broadcast' }),
        intervalMs: 60_000,
      }),
    ).toBe('passed');
    const { rows } = await database.db.query<{ scope: string; dispatched: boolean }>(
      `SELECT scope, dispatched_at IS NOT NULL AS dispatched FROM order_mail_witness_probes ORDER BY scope`,
    );
    expect(rows).toEqual([
      { scope: 'broadcast', dispatched: true },
      { scope: 'outbound', dispatched: true },
    ]);
  });

  it('records nothing before the attempt it is for has ended', async () => {
    const notBefore = new Date(Date.now() + 60_000);
    expect(await passProbeFence(database.db, { probe: probe(), intervalMs: 1, notBefore })).toBe('early');
    expect(await passProbeFence(database.db, { probe: probe(), intervalMs: 1, notBefore: new Date(0) })).toBe(
      'passed',
    );
    const { rows } = await database.db.query('SELECT probe_id FROM order_mail_witness_probes');
    expect(rows).toHaveLength(1);
  });

  it('records its answer once', async () => {
    const probeId = await answeredProbe('accepted', 200);
    await expect(
      database.db.query(`UPDATE order_mail_witness_probes SET outcome = 'rejected' WHERE probe_id = $1`, [
        probeId,
      ]),
    ).rejects.toThrow(/written once/);
  });
});

describe('a probe as a witness', () => {
  it('an accepted probe that left after the attempt had ended is a witness', async () => {
    const probeId = await answeredProbe('accepted', 200);
    expect(await witnessOfAttemptEnded(5_000)).toMatchObject({
      orderId: probeId,
      sendKey: expect.stringMatching(/^witness-probe\/test\//) as unknown,
      sendTimeoutMs: SEND_TIMEOUT_MS,
      destination: postmark,
    });
  });

  it('an accepted probe that left before the attempt had ended proves nothing', async () => {
    await answeredProbe('accepted', 200);
    // The attempt ends 5 s from now: the probe left while it was still on the wire.
    expect(await witnessOfAttemptEnded(-5_000)).toBeNull();
  });

  it('a refused, unanswered or unknown probe is no witness', async () => {
    await answeredProbe('rejected', 422);
    await answeredProbe('unknown', null);
    await answeredProbe('not_sent', 503);
    const unanswered = probe();
    await passProbeFence(database.db, { probe: unanswered, intervalMs: 1 });
    expect(await witnessOfAttemptEnded(5_000)).toBeNull();
  });
});
