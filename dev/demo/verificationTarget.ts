// The verification side of the runner's mail target: the sandbox's lookup faults, the webhook receiver for a
// provider that posts events (run in the runner's process, on the run's database, as `npm run webhooks` would
// run beside the workers: under a login of its own in order_mail_webhooks, checked as the CLI checks it), and
// the workers' MAIL_PROVIDER / MAIL_VERIFY_* variables. Under --lying-provider the sandbox also tells webhook
// lies (packages/sandbox/src/webhookLies.ts) after a share of the messages it took. With SES the sandbox
// plays SNS with the documented delivery policy, names its certificate by a URL of AWS's form, and the
// receiver trusts no test origin: it fetches certificates through the forger's network
// (packages/sandbox/src/snsLies.ts), which serves the forger's certificate at any URL but the genuine one, so
// only the pinned check stands between a forged message and the events table. Under --lying-provider the
// forger lies; --receiver-outage-* stops the receiver for a while.
import { randomBytes } from 'node:crypto';
import { escapeIdentifier, escapeLiteral } from 'pg';
import { createDatabase } from '../../src/db/pool';
import { scramSha256Verifier, WEBHOOK_GROUP_ROLE } from '../../src/db/roles';
import { assertWebhookSchemaReady } from '../../src/webhooks/webhookSchemaReady';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import {
  DEFAULT_SNS_CERT_HOST_PATTERN,
  SnsCertificates,
  snsTokenWindowMs,
} from '../../src/webhooks/snsWebhook';
import { DEFAULT_SANDBOX_API_KEY } from '../../packages/sandbox/src/mailSandbox';
import {
  SANDBOX_AWS_ACCESS_KEY_ID,
  SANDBOX_AWS_ACCOUNT_ID,
  SANDBOX_SES_CONFIGURATION_SET,
  SANDBOX_SES_REGION,
} from '../../packages/sandbox/src/providers/ses';
import { SANDBOX_SNS_TOPIC_ARN } from '../../packages/sandbox/src/sns';
import { policyRetryingEvery, snsRetryDelaysMs } from '../../packages/sandbox/src/snsDeliveryPolicy';
import { SnsForger } from '../../packages/sandbox/src/snsLies';
import { VERIFICATION_DEFAULTS } from '../../src/verification/verificationConfig';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { LOOKUP_LIE_KINDS } from '../../packages/sandbox/src/lookupLies';
import {
  LYING_LOOKUP_SHARE,
  LYING_NOT_TAKEN_SHARE,
  LYING_WEBHOOK_SHARE,
  LYING_WINDOW_SHARE,
  needsWebhookReceiver,
  verifies,
  type VerificationRunOptions,
} from './verificationOptions';

/**
 * The run's witness sink (MAIL_WITNESS_SINK_ADDRESS): the sandbox takes probes like any mail; the report counts
 * them apart and never as a customer's (isWitnessProbe).
 */
export const DEMO_WITNESS_SINK = 'witness-sink@shop.example';

/** Whether a message or request the sandbox saw is a witness probe: its order id is a probe's identity. */
export function isWitnessProbe(orderId: string | null): boolean {
  return orderId !== null && orderId.startsWith('witness-probe-');
}

/** The sending domain the Mailgun emulation is configured with. */
export const DEMO_MAILGUN_DOMAIN = 'mg.demo.example';
// Which of the sends taken without a fault a --lookup-reorder run shows late: fixed, so a run can be repeated.
const REORDER_SEED = 36;
// Short next to the send's deadlines of the run's workers (workerEnvironment.ts): a hung lookup is given up
// on, and the activity retries it, well inside the verification deadline.
const LOOKUP_TIMEOUT_MS = 2_000;
// The product's default, not a shorter one: under --lying-provider a lookup lies on about a quarter of the asks,
// and on a busy machine 60 s left a few unknowns with no honest answer yet, so the policy decided them and the
// run counted the mails that decision cost (1 of 300 missing under assume-sent, 4 of 300 twice under
// assume-failed, 2026-12-02). The run is to show what the product does as shipped.
const VERIFY_DEADLINE_MS = VERIFICATION_DEFAULTS.MAIL_VERIFY_DEADLINE_MS;

export interface VerificationParts {
  workerEnv: Record<string, string>;
  verifies: boolean;
  /** Stops the webhook receiver for `ms` (connections refused), then starts it again on its port. */
  receiverOutage(ms: number): Promise<void>;
  close(): Promise<void>;
}

export async function startVerificationParts(
  sandbox: MailSandbox,
  options: VerificationRunOptions,
  databaseUrl: string,
): Promise<VerificationParts> {
  const on = verifies(options);
  const workerEnv: Record<string, string> = {
    MAIL_PROVIDER: options.provider,
    ...(options.provider === 'mailgun' ? { MAILGUN_DOMAIN: DEMO_MAILGUN_DOMAIN } : {}),
    ...(options.provider === 'ses'
      ? {
          // The sandbox's SES checks SigV4 with its access key id and its API key as the secret.
          AWS_REGION: SANDBOX_SES_REGION,
          AWS_ACCESS_KEY_ID: SANDBOX_AWS_ACCESS_KEY_ID,
          AWS_SECRET_ACCESS_KEY: DEFAULT_SANDBOX_API_KEY,
          SES_CONFIGURATION_SET: SANDBOX_SES_CONFIGURATION_SET,
          SES_ACCOUNT_ID: SANDBOX_AWS_ACCOUNT_ID,
        }
      : {}),
    MAIL_VERIFY: on ? 'on' : 'off',
    ...(on
      ? {
          MAIL_VERIFY_SETTLE_DELAY_MS: String(options.settleDelayMs),
          // Below the providers' documented figures on purpose: the sandbox plays a lag we choose.
          MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'the demo sandbox indexes within its configured lag',
          MAIL_VERIFY_LOOKUP_TIMEOUT_MS: String(LOOKUP_TIMEOUT_MS),
          MAIL_VERIFY_DEADLINE_MS: String(VERIFY_DEADLINE_MS),
          // Probes for quiet periods, as a shop would configure them (docs/operating.md#witness-probes).
          MAIL_WITNESS_SINK_ADDRESS: DEMO_WITNESS_SINK,
        }
      : {}),
  };
  if (on && options.lookupFaults > 0) {
    sandbox.setLookupFaultPlan([
      { fault: { kind: 'status', status: 503 }, probability: options.lookupFaults / 2 },
      // Answered only at release or close: the lookup's deadline passes first, and the activity retries.
      { fault: { kind: 'hang' }, probability: options.lookupFaults / 2 },
    ]);
  }
  if (on && options.lyingProvider) {
    sandbox.setLookupLies({
      rates: LOOKUP_LIE_KINDS.map((kind) => ({
        kind,
        probability: kind === 'lag' || kind === 'wrong-domain' ? LYING_WINDOW_SHARE : LYING_LOOKUP_SHARE,
      })),
      // Twice the settle delay: a lookup asked at the settle delay is behind (the freshness witness's case).
      lagMs: 2 * options.settleDelayMs,
    });
  }
  if (on && options.lookupReorder !== null && options.lookupReorder.holdMs > 0) {
    sandbox.setLookupReorder({ ...options.lookupReorder, seed: REORDER_SEED });
  }
  if (!needsWebhookReceiver(options)) {
    return { workerEnv, verifies: on, receiverOutage: async () => undefined, close: async () => undefined };
  }

  const login = await receiverLogin(databaseUrl);
  const db = createDatabase(
    { connectionString: login.url, applicationName: 'order-mail-demo-webhooks' },
    () => undefined,
  );
  try {
    // What `npm run webhooks` checks before it serves: migrated, and a login that can store events and no more.
    await assertWebhookSchemaReady(db);
    const ses = options.provider === 'ses';
    const forger = new SnsForger();
    const sns = {
      topicArns: new Set([SANDBOX_SNS_TOPIC_ARN]),
      certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
    };
    if (ses) {
      sandbox.sns.useAwsCertificateUrl();
      sandbox.setSnsRetryDelays(snsRetryDelaysMs(policyRetryingEvery(options.snsRetryEveryS)));
    }
    // A restarted receiver starts with an empty certificate cache, as a new process does.
    const start = (port: number): Promise<WebhookServer> =>
      startWebhookServer({
        db,
        host: '127.0.0.1',
        port,
        sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
        mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
        ...(ses
          ? {
              sns,
              snsCertificates: new SnsCertificates({ fetchPem: forger.network(sandbox.sns) }),
            }
          : {}),
        maxAgeMs: options.webhookMaxAgeMs,
        log: () => undefined,
      });
    let receiver = await start(0);
    const port = Number(new URL(receiver.url).port);
    sandbox.configureWebhooks({
      url: receiver.url,
      // SNS with a delivery policy and a dead-letter queue loses nothing; its losses are the receiver's outages.
      lossProbability: ses ? 0 : options.webhookLoss,
      duplicateProbability: options.webhookDuplicates,
      ...(options.lyingProvider ? { lieProbability: LYING_WEBHOOK_SHARE } : {}),
    });
    if (ses && options.lyingProvider) {
      sandbox.configureSnsChaos({
        forger,
        notTakenLieProbability: LYING_NOT_TAKEN_SHARE,
        // Past what the receiver takes from a retry of SNS's: its Timestamp window, and a minute more.
        staleByMs: snsTokenWindowMs({}, options.webhookMaxAgeMs) + 60_000,
      });
    }
    let down: Promise<void> | null = null;
    return {
      workerEnv,
      verifies: on,
      async receiverOutage(ms) {
        down = (async () => {
          await receiver.close();
          await new Promise((resolve) => setTimeout(resolve, ms));
          receiver = await start(port);
        })();
        await down;
        down = null;
      },
      async close() {
        if (down !== null) await down.catch(() => undefined);
        await receiver.close();
        await db.close();
        await login.drop();
      },
    };
  } catch (error) {
    await db.close();
    await login.drop();
    throw error;
  }
}

/**
 * A login of the receiver's own for this run, a member of order_mail_webhooks (what `npm run db:roles` makes
 * from WEBHOOK_DATABASE_URL), made with the run's database login; its URL. The password is random and reaches
 * Postgres only as a SCRAM verifier. drop() removes it again (best effort: a run on your own Postgres leaves
 * no role behind; the embedded one is thrown away anyway).
 */
async function receiverLogin(databaseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const user = `order_mail_demo_hooks_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(24).toString('hex');
  const admin = createDatabase(
    { connectionString: databaseUrl, applicationName: 'order-mail-demo-roles' },
    () => undefined,
  );
  try {
    const { rows } = await admin.query<{ database: string }>('SELECT current_database() AS database');
    await admin.query(
      `CREATE ROLE ${escapeIdentifier(user)} LOGIN PASSWORD ${escapeLiteral(scramSha256Verifier(password))} ` +
        `IN ROLE ${escapeIdentifier(WEBHOOK_GROUP_ROLE)}`,
    );
    await admin.query(
      `GRANT CONNECT ON DATABASE ${escapeIdentifier(rows[0]!.database)} TO ${escapeIdentifier(user)}`,
    );
  } finally {
    await admin.close();
  }
  const url = new URL(databaseUrl);
  url.username = user;
  url.password = password;
  return {
    url: url.toString(),
    async drop() {
      const owner = createDatabase(
        { connectionString: databaseUrl, applicationName: 'order-mail-demo-roles' },
        () => undefined,
      );
      try {
        const { rows } = await owner.query<{ database: string }>('SELECT current_database() AS database');
        await owner.query(
          `REVOKE CONNECT ON DATABASE ${escapeIdentifier(rows[0]!.database)} FROM ${escapeIdentifier(user)}`,
        );
        await owner.query(`DROP ROLE IF EXISTS ${escapeIdentifier(user)}`);
      } catch {
        // The database may be gone already (the embedded one stops first on some paths).
      } finally {
        await owner.close().catch(() => undefined);
      }
    },
  };
}
