// `npm run sandbox`: runs the mail sandbox on its own, for the demo and for tests in other processes.
//   SANDBOX_HOST     default 127.0.0.1 (the control API has no authentication; 0.0.0.0 only inside a container)
//   SANDBOX_PORT     default 4010
//   SANDBOX_API_KEY  default "sandbox-key"
//   SANDBOX_FAULTS   optional JSON fault plan, e.g. {"rates":[{"fault":{"kind":"accept-then-drop"},"probability":0.1}]}
//   SANDBOX_RELAY_TO optional host:port of an SMTP inbox (MailDev) that gets every accepted message
//   SANDBOX_INDEXING_LAG_MS  how long a message takes to show in the providers' lookups (default 1000)
//   SANDBOX_WEBHOOK_URL      optional base URL of a webhook receiver (npm run webhooks) for the SendGrid and
//                            Mailgun emulations' signed events; the keys to verify them are printed at start

import { parseFaultPlan, type FaultPlan } from './faults';
import { DEFAULT_SANDBOX_API_KEY, startMailSandbox } from './mailSandbox';
import type { RelayTarget } from './relayToInbox';

interface SandboxCliConfig {
  host: string;
  port: number;
  apiKey: string;
  faultPlan: FaultPlan | undefined;
  relayTo: RelayTarget | undefined;
  indexingLagMs: number | undefined;
  webhookUrl: string | null;
}

class SandboxCliConfigError extends Error {
  override readonly name = 'SandboxCliConfigError';
  readonly code = 'ERR_SANDBOX_CLI_CONFIG';
}

function readConfig(env: NodeJS.ProcessEnv): SandboxCliConfig {
  const problems: string[] = [];
  const portText = env.SANDBOX_PORT ?? '4010';
  const port = Number(portText);
  if (!/^[0-9]+$/.test(portText) || port > 65535) {
    problems.push('SANDBOX_PORT must be an integer from 0 to 65535');
  }
  const apiKey = env.SANDBOX_API_KEY ?? DEFAULT_SANDBOX_API_KEY;
  if (apiKey.length === 0) problems.push('SANDBOX_API_KEY must not be empty');
  let faultPlan: FaultPlan | undefined;
  if (env.SANDBOX_FAULTS !== undefined && env.SANDBOX_FAULTS !== '') {
    try {
      faultPlan = parseFaultPlan(JSON.parse(env.SANDBOX_FAULTS));
    } catch (error) {
      problems.push(
        `SANDBOX_FAULTS is not a valid fault plan: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  let relayTo: RelayTarget | undefined;
  if (env.SANDBOX_RELAY_TO !== undefined && env.SANDBOX_RELAY_TO !== '') {
    const match = /^([^\s:]+):([0-9]{1,5})$/.exec(env.SANDBOX_RELAY_TO);
    if (match === null) problems.push('SANDBOX_RELAY_TO must look like host:port, e.g. 127.0.0.1:1025');
    else relayTo = { host: match[1]!, port: Number(match[2]) };
  }
  const lagText = env.SANDBOX_INDEXING_LAG_MS ?? '';
  if (lagText !== '' && !/^[0-9]+$/.test(lagText))
    problems.push('SANDBOX_INDEXING_LAG_MS must be an integer >= 0');
  const webhookUrl = env.SANDBOX_WEBHOOK_URL || null;
  if (webhookUrl !== null && !/^https?:\/\/\S+$/.test(webhookUrl)) {
    problems.push('SANDBOX_WEBHOOK_URL must be an http(s) URL, e.g. http://127.0.0.1:8090');
  }
  if (problems.length > 0) {
    throw new SandboxCliConfigError(`Invalid sandbox configuration: ${problems.join('; ')}.`);
  }
  return {
    host: env.SANDBOX_HOST || '127.0.0.1',
    port,
    apiKey,
    faultPlan,
    relayTo,
    indexingLagMs: lagText === '' ? undefined : Number(lagText),
    webhookUrl,
  };
}

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const sandbox = await startMailSandbox({
    host: config.host,
    port: config.port,
    apiKey: config.apiKey,
    faultPlan: config.faultPlan,
    relayTo: config.relayTo,
    lookups: config.indexingLagMs === undefined ? {} : { indexingLagMs: config.indexingLagMs },
    webhooks: { url: config.webhookUrl },
  });
  const keyNote = config.apiKey === DEFAULT_SANDBOX_API_KEY ? ` (API key "${DEFAULT_SANDBOX_API_KEY}")` : '';
  console.log(
    `Mail sandbox listening on ${sandbox.url}${keyNote}; control API under ${sandbox.url}/_sandbox/`,
  );
  if (config.relayTo !== undefined) {
    console.log(`Relaying accepted messages to ${config.relayTo.host}:${config.relayTo.port}`);
  }
  if (config.faultPlan !== undefined) console.log(`Fault plan: ${JSON.stringify(config.faultPlan)}`);
  if (config.webhookUrl !== null) {
    // Sandbox keys, made for this run: what the receiver needs to verify the emulations' signatures.
    console.log(`Posting SendGrid and Mailgun events to ${config.webhookUrl}; for npm run webhooks:`);
    console.log(`  SENDGRID_WEBHOOK_PUBLIC_KEY=${sandbox.webhookKeys.sendgridPublicKey}`);
    console.log(`  MAILGUN_WEBHOOK_SIGNING_KEY=${sandbox.webhookKeys.mailgunSigningKey}`);
  }

  const stop = (signal: NodeJS.Signals): void => {
    console.log(`Mail sandbox stopping (${signal}).`);
    sandbox.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('Mail sandbox did not close cleanly:', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
    process.exit(1);
  });
}
