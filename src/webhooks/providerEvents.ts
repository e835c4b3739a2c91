// The one module that writes the provider events and delivery tokens (migration 0006); a delivery is one
// transaction, its token first, so a replay changes nothing.
import type { Database } from '../db/pool';
import type { ProviderEventType, WebhookProvider } from './normalizedEvent';
import type { AuthenticDelivery } from './signedDelivery';

export type StoreResult =
  | { kind: 'stored'; newEvents: number; knownEvents: number }
  /** This very signed request was taken before: refused, nothing written. */
  | { kind: 'replayed' };

export async function storeDelivery(
  db: Database,
  provider: WebhookProvider,
  delivery: AuthenticDelivery,
  /** This provider's tokens signed before this are forgotten: a request that old is refused for its timestamp. */
  forgetTokensSignedBefore: Date,
): Promise<StoreResult> {
  // Nothing of ours: nothing written, except Mailgun's token, spent once seen (its signature covers no data).
  if (delivery.events.length === 0 && provider !== 'mailgun') {
    return { kind: 'stored', newEvents: 0, knownEvents: 0 };
  }
  return db.transaction(async (client) => {
    const token = await client.query(
      `INSERT INTO order_mail_webhook_deliveries (provider, token, signed_at) VALUES ($1, $2, $3)
       ON CONFLICT (provider, token) DO NOTHING`,
      [provider, delivery.token, delivery.signedAt],
    );
    if (token.rowCount === 0) return { kind: 'replayed' } as const;
    let newEvents = 0;
    for (const event of delivery.events) {
      const inserted = await client.query(
        `INSERT INTO order_mail_provider_events
           (provider, provider_event_id, order_id, send_key, provider_message_id, event_type, occurred_at, reason,
            sending_account, configuration_set)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (provider, provider_event_id) DO NOTHING`,
        [
          event.provider,
          event.providerEventId,
          event.orderId,
          event.sendKey,
          event.providerMessageId,
          event.eventType,
          event.occurredAt,
          event.reason,
          event.source?.account ?? null,
          event.source?.configurationSet ?? null,
        ],
      );
      newEvents += inserted.rowCount ?? 0;
    }
    // Each provider forgets only its own tokens: their windows differ (SNS retries for an hour).
    await client.query(`DELETE FROM order_mail_webhook_deliveries WHERE provider = $1 AND signed_at < $2`, [
      provider,
      forgetTokensSignedBefore,
    ]);
    return { kind: 'stored', newEvents, knownEvents: delivery.events.length - newEvents } as const;
  });
}

export interface ProviderEventRow {
  provider: WebhookProvider;
  providerEventId: string;
  sendKey: string | null;
  providerMessageId: string | null;
  eventType: ProviderEventType;
  occurredAt: Date;
  receivedAt: Date;
  reason: string | null;
  /** SES: the account and configuration set the event names; null for other providers (migration 0052). */
  sendingAccount: string | null;
  configurationSet: string | null;
}

const EVENT_COLUMNS = `provider, provider_event_id AS "providerEventId", send_key AS "sendKey",
  provider_message_id AS "providerMessageId", event_type AS "eventType", occurred_at AS "occurredAt",
  received_at AS "receivedAt", reason, sending_account AS "sendingAccount",
  configuration_set AS "configurationSet"`;

// Providers stamp events to the second (SendGrid), and posts arrive in any order, so events of the same time
// are put in the order they must have happened: taken, then what became of it, then a complaint.
const IN_ORDER = `occurred_at, CASE event_type WHEN 'accepted' THEN 0 WHEN 'complained' THEN 2 ELSE 1 END, id`;

/** Every event of the order, oldest first: what `ops status` shows. */
export async function listProviderEvents(db: Database, orderId: string): Promise<ProviderEventRow[]> {
  const { rows } = await db.query<ProviderEventRow>(
    `SELECT ${EVENT_COLUMNS} FROM order_mail_provider_events WHERE order_id = $1 ORDER BY ${IN_ORDER}`,
    [orderId],
  );
  return rows;
}

/** Every stored event of this send, oldest first; what counts is src/evidence/evidenceRules.ts's to say. */
export async function listSendEvents(
  db: Database,
  query: { orderId: string; sendKey: string; provider: WebhookProvider },
): Promise<ProviderEventRow[]> {
  const { rows } = await db.query<ProviderEventRow>(
    `SELECT ${EVENT_COLUMNS} FROM order_mail_provider_events
      WHERE order_id = $1 AND send_key = $2 AND provider = $3
      ORDER BY ${IN_ORDER} LIMIT 100`,
    [query.orderId, query.sendKey, query.provider],
  );
  return rows;
}
