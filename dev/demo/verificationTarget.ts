// The verification side of the runner's mail target: the sandbox's lookup faults, the webhook receiver for a
// provider that posts events (run in the runner's process, on the run's database, as `npm run webhooks` would
// run beside the workers), and the workers' MAIL_PROVIDER / MAIL_VERIFY_* variables.
import { createDatabase } from '../../src/db/pool';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer } from '../../src/webhooks/webhookServer';
import type { MailSandbox } from '../sandbox/mailSandbox';
import { LOOKUP_LIE_KINDS } from '../sandbox/lookupLies';
import {
  LYING_LOOKUP_SHARE,
  LYING_WINDOW_SHARE,
  needsWebhookReceiver,
  verifies,
  type VerificationRunOptions,
} from './verificationOptions';

/** The sending domain the Mailgun emulation is configured with. */
export const DEMO_MAILGUN_DOMAIN = 'mg.demo.example';
// Short next to the send's deadlines in the runner (src/demo/runner.ts): a hung lookup is given up on, and
// the activity retries it, well inside the verification deadline.
const LOOKUP_TIMEOUT_MS = 2_000;
const VERIFY_DEADLINE_MS = 60_000;

export interface VerificationParts {
  workerEnv: Record<string, string>;
  verifies: boolean;
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
    MAIL_VERIFY: on ? 'on' : 'off',
    ...(on
      ? {
          MAIL_VERIFY_SETTLE_DELAY_MS: String(options.settleDelayMs),
          // Below the providers' documented figures on purpose: the sandbox plays a lag we choose.
          MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'the demo sandbox indexes within its configured lag',
          MAIL_VERIFY_LOOKUP_TIMEOUT_MS: String(LOOKUP_TIMEOUT_MS),
          MAIL_VERIFY_DEADLINE_MS: String(VERIFY_DEADLINE_MS),
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
  if (!needsWebhookReceiver(options)) return { workerEnv, verifies: on, close: async () => undefined };

  const db = createDatabase(
    { connectionString: databaseUrl, applicationName: 'order-mail-demo-webhooks' },
    () => undefined,
  );
  try {
    const receiver = await startWebhookServer({
      db,
      host: '127.0.0.1',
      port: 0,
      sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
      mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
      maxAgeMs: 300_000,
      log: () => undefined,
    });
    sandbox.configureWebhooks({
      url: receiver.url,
      lossProbability: options.webhookLoss,
      duplicateProbability: options.webhookDuplicates,
    });
    return {
      workerEnv,
      verifies: on,
      async close() {
        await receiver.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}
