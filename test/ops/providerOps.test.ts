// npm run ops -- provider …, and the shared health it reads and sets, on a real Postgres: the grammar refuses
// unknown names before anything runs, a provider outside MAIL_PROVIDERS is refused with nothing written, a pin
// lifts the other pin, and the send's failures open a skip window at the threshold that a success closes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countProviderFailure,
  countProviderSuccess,
  readProviderHealth,
  readProviderStandings,
} from '../../src/db/providerHealth';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { parseOpsCommand, UsageError } from '../../src/ops/opsCommand';
import { OpsRefusal } from '../../src/ops/opsContext';
import { formatProviderStatus, runProviderAct } from '../../src/ops/providerOps';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
const configured = ['postmark', 'mailgun'];

beforeAll(async () => {
  database = await openTestDatabase('provider_ops');
});
afterAll(async () => {
  await database?.close();
});

describe('the grammar', () => {
  it('reads status, pin, skip and auto', () => {
    expect(parseOpsCommand(['provider', 'status'])).toMatchObject({ provider: { act: 'status' } });
    expect(parseOpsCommand(['provider', 'pin', 'mailgun'])).toMatchObject({
      provider: { act: 'pin', provider: 'mailgun' },
    });
    expect(parseOpsCommand(['provider', 'auto'])).toMatchObject({
      provider: { act: 'auto', provider: null },
    });
  });
  it.each([
    [['provider', 'pin', 'mailchimp'], /unknown provider "mailchimp".*Nothing was changed/],
    [['provider', 'skip'], /needs a provider/],
    [['provider', 'reboot'], /one of status, pin, skip, auto/],
    [['provider', 'pin', 'postmark', 'mailgun'], /unexpected mailgun/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseOpsCommand(argv)).toThrow(UsageError);
    expect(() => parseOpsCommand(argv)).toThrow(message);
  });
});

describe('the acts', () => {
  it('refuses a provider outside MAIL_PROVIDERS and writes nothing', async () => {
    const act = runProviderAct(
      database.db,
      { act: 'skip', provider: 'ses' },
      { operator: 'tester', configured },
    );
    await expect(act).rejects.toBeInstanceOf(OpsRefusal);
    expect(await readProviderHealth(database.db)).toEqual([]);
  });

  it('pins one, which lifts another pin; skips; auto puts every one back', async () => {
    await runProviderAct(database.db, { act: 'pin', provider: 'postmark' }, { operator: 'a', configured });
    const status = await runProviderAct(
      database.db,
      { act: 'pin', provider: 'mailgun' },
      { operator: 'b', configured },
    );
    expect(status.health.map((row) => [row.provider, row.operatorMode, row.operatorSetBy])).toEqual([
      ['mailgun', 'pinned', 'b'],
      ['postmark', 'auto', 'b'],
    ]);
    expect(formatProviderStatus(status)).toMatch(/mailgun: pinned \(set by b\)/);
    await runProviderAct(database.db, { act: 'skip', provider: 'postmark' }, { operator: 'c', configured });
    expect((await readProviderStandings(database.db)).map((row) => row.operatorMode)).toEqual([
      'pinned',
      'skipped',
    ]);
    await runProviderAct(database.db, { act: 'auto', provider: null }, { operator: 'd', configured });
    expect((await readProviderStandings(database.db)).map((row) => row.operatorMode)).toEqual([
      'auto',
      'auto',
    ]);
  });
});

describe('the shared health', () => {
  it('skips a provider once its failures in a row reach the threshold, until a success', async () => {
    const settings = { skipAfterFailures: 3, skipForMs: 60_000 };
    for (const expected of [false, false, true]) {
      const counted = await countProviderFailure(database.db, {
        provider: 'postmark',
        failure: 'ECONNREFUSED',
        settings,
      });
      expect(counted.skipped).toBe(expected);
    }
    const standing = (await readProviderStandings(database.db)).find((row) => row.provider === 'postmark');
    expect(standing?.unhealthy).toBe(true);
    await countProviderSuccess(database.db, 'postmark');
    const after = (await readProviderHealth(database.db)).find((row) => row.provider === 'postmark');
    expect(after).toMatchObject({ consecutiveFailures: 0, skippedNow: false });
  });
});

describe('status: what is still bound to each provider (draining)', () => {
  async function sendingAt(provider: string): Promise<void> {
    const orderId = await createOrder(database.db);
    const workflowScope = `default/${orderId}/`;
    const decision = await claimOrderMailRow(database.db, {
      orderId,
      claimToken: `${workflowScope}run-1`,
      workflowScope,
      issuedAt: new Date(),
      policy: 'assume-failed',
      idempotency: null,
      sendTimeoutMs: 8_000,
      recordedBy: 'test',
      providers: [provider],
    });
    expect(decision).toMatchObject({ kind: 'claimed', provider });
  }

  it('counts open rows per provider, one no longer configured included, and shows the draining ones', async () => {
    await sendingAt('mailgun');
    await sendingAt('mailgun');
    await sendingAt('postmark');
    const status = await runProviderAct(
      database.db,
      { act: 'status' },
      {
        operator: 'tester',
        configured: ['postmark', 'ses'],
        draining: ['ses'],
        retentionMs: (provider) => (provider === 'postmark' ? 7 * 86_400_000 : null),
      },
    );
    expect(status.bound.find((entry) => entry.provider === 'mailgun')).toMatchObject({
      sending: 2,
      failedBound: 0,
      policySettled: 0,
    });
    expect(status.bound.find((entry) => entry.provider === 'postmark')).toMatchObject({
      sending: 1,
      retentionMs: 7 * 86_400_000,
      lookup: true,
    });
    expect(status.bound.find((entry) => entry.provider === 'ses')).toMatchObject({
      sending: 0,
      lookup: false,
    });
    const text = formatProviderStatus(status);
    expect(text).toContain('mailgun (NOT in MAIL_PROVIDERS): 2 open row(s)');
    expect(text).toContain('Draining (MAIL_PROVIDERS_DRAINING, no new attempts): ses');
  });

  it('refuses to pin a draining provider and writes nothing', async () => {
    const before = await readProviderHealth(database.db);
    const act = runProviderAct(
      database.db,
      { act: 'pin', provider: 'mailgun' },
      { operator: 'tester', configured, draining: ['mailgun'] },
    );
    await expect(act).rejects.toMatchObject({ code: 'PROVIDER_DRAINING' });
    expect(await readProviderHealth(database.db)).toEqual(before);
  });
});
