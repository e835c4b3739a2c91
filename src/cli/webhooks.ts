// `npm run webhooks`: the provider webhook receiver (src/webhooks/webhookServer.ts), configured from the
// environment (src/webhooks/webhookConfig.ts). Applies the migrations first, like a worker. Stops on
// SIGINT/SIGTERM once the requests in flight are answered.
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { migrate } from '../db/migrate';
import { createDatabase } from '../db/pool';
import { describePostgresFailure } from '../dependencyRetry';
import { loadWebhookConfig } from '../webhooks/webhookConfig';
import { startWebhookServer } from '../webhooks/webhookServer';

async function main(): Promise<void> {
  const config = loadWebhookConfig(process.env);
  await migrate(config.databaseUrl).catch((error: unknown) => {
    throw new Error(describePostgresFailure(error, config.databaseUrl, 'DATABASE_URL'), { cause: error });
  });
  const db = createDatabase({ connectionString: config.databaseUrl, applicationName: 'order-mail-webhooks' });
  const server = await startWebhookServer({
    db,
    host: config.host,
    port: config.port,
    sendgridPublicKey: config.sendgridPublicKey,
    mailgunSigningKey: config.mailgunSigningKey,
    maxAgeMs: config.maxAgeMs,
  });
  const endpoints = [
    config.sendgridPublicKey === null ? null : '/webhooks/sendgrid',
    config.mailgunSigningKey === null ? null : '/webhooks/mailgun',
  ].filter((endpoint) => endpoint !== null);
  console.log(
    JSON.stringify({
      level: 'info',
      component: 'webhooks',
      message: 'Webhook receiver started',
      url: server.url,
      endpoints,
    }),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  await db.close();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
