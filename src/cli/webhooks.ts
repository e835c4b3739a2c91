// `npm run webhooks`: the provider webhook receiver (src/webhooks/webhookServer.ts). It runs no DDL and refuses
// to start unless the schema is migrated and its login is the receiver's own (webhookSchemaReady.ts).
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { createDatabase } from '../db/pool';
import { describePostgresFailure } from '../dependencyRetry';
import { loadWebhookConfig } from '../webhooks/webhookConfig';
import { WebhookMetrics, startWebhookMetricsServer } from '../webhooks/webhookMetrics';
import { assertWebhookSchemaReady } from '../webhooks/webhookSchemaReady';
import { startWebhookServer } from '../webhooks/webhookServer';

async function main(): Promise<void> {
  const config = loadWebhookConfig(process.env);
  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: 'order-mail-webhooks',
  });
  try {
    await assertWebhookSchemaReady(db).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'SchemaNotReadyError') throw error;
      throw new Error(describePostgresFailure(error, config.databaseUrl, 'WEBHOOK_DATABASE_URL'), {
        cause: error,
      });
    });
    const metrics = new WebhookMetrics();
    const metricsServer =
      config.metrics === null
        ? null
        : await startWebhookMetricsServer(metrics, config.metrics.host, config.metrics.port);
    const server = await startWebhookServer({
      db,
      host: config.host,
      port: config.port,
      sendgridPublicKey: config.sendgridPublicKey,
      mailgunSigningKey: config.mailgunSigningKey,
      sns: config.sns,
      maxAgeMs: config.maxAgeMs,
      maxBodyBytes: config.maxBodyBytes,
      requestTimeoutMs: config.requestTimeoutMs,
      maxConnections: config.maxConnections,
      metrics,
    });
    const endpoints = [
      config.sendgridPublicKey === null ? null : '/webhooks/sendgrid',
      config.mailgunSigningKey === null ? null : '/webhooks/mailgun',
      config.sns === null ? null : '/webhooks/ses',
    ].filter((endpoint) => endpoint !== null);
    console.log(
      JSON.stringify({
        level: 'info',
        component: 'webhooks',
        message: 'Webhook receiver started',
        url: server.url,
        metricsUrl: metricsServer === null ? null : `${metricsServer.url}/metrics`,
        endpoints,
      }),
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
    await metricsServer?.close();
  } finally {
    await db.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
