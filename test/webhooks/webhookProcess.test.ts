// `npm run webhooks` as it ships (built, its own process) under its own least-privilege login (issue 22,
// finding 11): it runs no DDL, refuses a login with more power than it needs, serves and counts requests on a
// loopback metrics port, and its role cannot read the orders or the mail log. Then the fuzz: thousands of bad
// requests against that process, each refused with nothing written, the server still answering after, and its
// memory bounded.
import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { escapeIdentifier } from 'pg';
import { Pool, request } from 'undici';
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';
import { SandboxWebhooks } from '../../packages/sandbox/src/webhooks';
import { createDatabase, type Database } from '../../src/db/pool';
import { getFreePort } from '../../src/shared/freePort';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { buildProduct, type BuiltProduct, type RunningCommand } from '../support/builtProduct';
import { createOrder, waitFor } from '../support/testKit';

const MAX_BODY_BYTES = 65_536;
const REQUEST_TIMEOUT_MS = 2_000;
const PERMISSION_DENIED = '42501';

let product: BuiltProduct;
let isolated: IsolatedDatabase;
let admin: Database;
let signer: SandboxWebhooks;
const suffix = randomUUID().replace(/-/g, '').slice(0, 10);
const users = {
  migrator: `test_migrator_${suffix}`,
  worker: `test_worker_${suffix}`,
  webhooks: `test_hooks_${suffix}`,
};
const urls = { migrator: '', worker: '', webhooks: '' };

beforeAll(async () => {
  product = await buildProduct();
  isolated = await createIsolatedDatabase(inject('databaseUrl'), 'webhook_process');
  admin = createDatabase({ connectionString: isolated.connectionString, applicationName: 'test admin' });
  for (const [name, user] of Object.entries(users) as [keyof typeof users, string][]) {
    const url = new URL(isolated.connectionString);
    url.username = user;
    url.password = randomUUID().replace(/-/g, '');
    urls[name] = url.toString();
  }
  signer = new SandboxWebhooks({}, 7);
}, 240_000);

afterAll(async () => {
  await signer?.close();
  await admin?.close();
  await isolated?.drop();
  const roles = createDatabase({ connectionString: inject('databaseUrl'), applicationName: 'test roles' });
  try {
    for (const user of Object.values(users))
      await roles.query(`DROP ROLE IF EXISTS ${escapeIdentifier(user)}`);
  } finally {
    await roles.close();
  }
  await product?.remove();
});

function receiverEnv(databaseUrl: string, port: number, metricsPort: number): Record<string, string> {
  return {
    // What an operator might still have exported: the receiver must not fall back to it.
    DATABASE_URL: databaseUrl,
    WEBHOOK_DATABASE_URL: databaseUrl,
    WEBHOOK_BIND_ADDRESS: `127.0.0.1:${port}`,
    WEBHOOK_METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}`,
    SENDGRID_WEBHOOK_PUBLIC_KEY: signer.sendgridPublicKey,
    MAILGUN_WEBHOOK_SIGNING_KEY: signer.mailgunSigningKey,
    WEBHOOK_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
    WEBHOOK_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  };
}

async function tableExists(db: Database, name: string): Promise<boolean> {
  const { rows } = await db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [name]);
  return rows[0]?.found !== null;
}

// The two describes run side by side (issue 38): this one on a database of its own, never migrated, the other
// on the file's, which its beforeAll migrates.
describe('npm run webhooks runs no DDL', { concurrent: true }, () => {
  it('on a database not migrated yet it refuses, says to run db:migrate, and creates nothing', async ({
    expect,
  }) => {
    const bare = await createIsolatedDatabase(inject('databaseUrl'), 'webhook_no_ddl');
    const owner = createDatabase({ connectionString: bare.connectionString, applicationName: 'test owner' });
    try {
      // The owner's login, which could run every migration: the receiver still must not.
      const receiver = product.spawnNpm('webhooks', {
        ...receiverEnv(bare.connectionString, await getFreePort(), await getFreePort()),
      });
      try {
        expect(await Promise.race([receiver.exited, delay(30_000).then(() => 'still running')])).toBe(1);
        expect(receiver.output()).toMatch(/runs no migrations[\s\S]*npm run db:migrate/);
        expect(await tableExists(owner, 'order_mail_schema_migrations')).toBe(false);
        expect(await tableExists(owner, 'order_mail_provider_events')).toBe(false);
      } finally {
        await receiver.stop();
      }
    } finally {
      await owner.close();
      await bare.drop();
    }
  }, 60_000);
});

describe('npm run webhooks under its own least-privilege login', { concurrent: true }, () => {
  let receiver: RunningCommand;
  let url: string;
  let metricsUrl: string;
  let hooks: Database;
  let fuzzFigures: string;

  beforeAll(async () => {
    await product.npm('db:roles', {
      ADMIN_DATABASE_URL: isolated.connectionString,
      MIGRATION_DATABASE_URL: urls.migrator,
      DATABASE_URL: urls.worker,
      WEBHOOK_DATABASE_URL: urls.webhooks,
    });
    await product.npm('db:migrate', { MIGRATION_DATABASE_URL: urls.migrator });
    hooks = createDatabase({ connectionString: urls.webhooks, applicationName: 'test webhook role' });
    const port = await getFreePort();
    const metricsPort = await getFreePort();
    receiver = product.spawnNpm('webhooks', receiverEnv(urls.webhooks, port, metricsPort));
    url = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    await waitFor(
      'the receiver to answer /readyz',
      async () => {
        if (receiver.child.exitCode !== null) throw new Error(`receiver exited: ${receiver.output()}`);
        const response = await fetch(`${url}/readyz`).catch(() => null);
        return response?.ok === true ? true : undefined;
      },
      30_000,
    );
  }, 120_000);

  afterAll(async () => {
    if (fuzzFigures !== undefined) console.log(fuzzFigures);
    await receiver?.stop();
    await hooks?.close();
  });

  // Beside the two below: a process of its own, which exits at start and writes nothing.
  it("refuses to start with the workers' login: it could read every customer's address", async ({
    expect,
  }) => {
    const other = product.spawnNpm(
      'webhooks',
      receiverEnv(urls.worker, await getFreePort(), await getFreePort()),
    );
    try {
      expect(await Promise.race([other.exited, delay(30_000).then(() => 'still running')])).toBe(1);
      expect(other.output()).toMatch(/may SELECT on order_mail_source\.orders_for_mail[\s\S]*too much/);
    } finally {
      await other.stop();
    }
  }, 60_000);

  // Side by side with the test above (the suite is concurrent), one after the other within (the tests are not):
  // the fuzz counts every event and request the receiver took, this one's included.
  describe('on the running receiver, one after the other', { concurrent: true }, () => {
    it(
      'stores a signed event, counts it on its loopback metrics port, and its role reads no order and no log',
      { concurrent: false },
      async ({ expect }) => {
        const orderId = await createOrder(admin);
        const answer = await postMailgun(url, mailgunEvent(orderId));
        expect(answer).toMatchObject({ status: 200, body: { stored: 1 } });
        const { rows } = await admin.query(
          'SELECT order_id::text FROM order_mail_provider_events WHERE order_id = $1',
          [orderId],
        );
        expect(rows).toEqual([{ order_id: orderId }]);
        const metrics = await (await fetch(metricsUrl)).text();
        expect(metrics).toMatch(
          /order_mail_webhook_requests_total\{provider="mailgun",outcome="stored"\} 1\b/,
        );
        expect(metrics).toMatch(/order_mail_webhook_events_total\{provider="mailgun",result="stored"\} 1\b/);

        for (const statement of [
          'SELECT * FROM orders LIMIT 1',
          'SELECT id FROM orders LIMIT 1',
          'SELECT * FROM order_items LIMIT 1',
          'SELECT * FROM order_mail_log LIMIT 1',
          `UPDATE order_mail_log SET state = 'sent'`,
          'SELECT * FROM order_mail_attempts LIMIT 1',
          // Not even the events it stores: evidence is read by the workers.
          'SELECT * FROM order_mail_provider_events LIMIT 1',
          'CREATE TABLE order_mail_x (id int)',
        ]) {
          expect(await sqlState(hooks, statement), statement).toBe(PERMISSION_DENIED);
        }
      },
    );

    it(
      'fuzz: thousands of bad requests, every one refused with nothing written, the server still answering, memory bounded',
      { concurrent: false, timeout: 300_000 },
      async ({ expect }) => {
        const pool = new Pool(url, { connections: 8, pipelining: 1 });
        try {
          // A genuine delivery of each provider first: the replays below replay these.
          const baseOrder = await createOrder(admin);
          const sgBody = JSON.stringify([sendGridEvent(baseOrder)]);
          const sgHeaders = signSendGrid(sgBody);
          expect((await send(pool, '/webhooks/sendgrid', sgBody, sgHeaders)).status).toBe(200);
          const mgToken = randomBytes(25).toString('hex');
          const mgTimestamp = String(nowSeconds());
          expect(
            (
              await send(
                pool,
                '/webhooks/mailgun',
                mailgunBody(mailgunEvent(baseOrder), mgToken, mgTimestamp),
              )
            ).status,
          ).toBe(200);

          const before = await snapshot();
          const memoryBefore = await memory(metricsUrl);
          const otherOrder = String(Number(baseOrder) + 1);
          // Mailgun's signature covers no data: a signed triple whose event is skipped is still spent (its token
          // kept), so those tokens are the one thing these requests may add.
          const spentTokens: string[] = [];
          const kinds: Record<string, () => Promise<number | 'reset'>> = {
            'sendgrid forged signature': () =>
              send(pool, '/webhooks/sendgrid', sgBody, {
                ...sgHeaders,
                'x-twilio-email-event-webhook-signature': randomBytes(70).toString('base64'),
              }).then(statusOf),
            'sendgrid unsigned': () => send(pool, '/webhooks/sendgrid', sgBody).then(statusOf),
            'sendgrid stale': () => {
              const body = JSON.stringify([sendGridEvent(baseOrder)]);
              return send(pool, '/webhooks/sendgrid', body, signSendGrid(body, nowSeconds() - 3_600)).then(
                statusOf,
              );
            },
            'sendgrid replayed': () => send(pool, '/webhooks/sendgrid', sgBody, sgHeaders).then(statusOf),
            'sendgrid malformed JSON, signed': () => {
              const body = `[{"event":"processed","order_id":"${baseOrder}"`;
              return send(pool, '/webhooks/sendgrid', body, signSendGrid(body)).then(statusOf);
            },
            "sendgrid other order's key and message id": () => {
              const body = JSON.stringify([
                sendGridEvent(baseOrder, {
                  send_key: keyOf(otherOrder),
                  sg_message_id: `sg-${otherOrder}.f`,
                }),
              ]);
              return send(pool, '/webhooks/sendgrid', body, signSendGrid(body)).then(statusOf);
            },
            "sendgrid strangers only, mixed with other orders' keys": () => {
              const body = JSON.stringify([
                sendGridEvent(baseOrder, { order_id: 'INV-77', send_key: undefined }),
                sendGridEvent(baseOrder, { send_key: 'their/key' }),
                sendGridEvent(baseOrder, { send_key: keyOf(otherOrder) }),
                sendGridEvent(baseOrder, { timestamp: 1 }),
              ]);
              return send(pool, '/webhooks/sendgrid', body, signSendGrid(body)).then(statusOf);
            },
            'mailgun forged signature': () => {
              const body = JSON.parse(mailgunBody(mailgunEvent(baseOrder))) as {
                signature: { signature: string };
              };
              body.signature.signature = randomBytes(32).toString('hex');
              return send(pool, '/webhooks/mailgun', JSON.stringify(body)).then(statusOf);
            },
            'mailgun stale': () =>
              send(
                pool,
                '/webhooks/mailgun',
                mailgunBody(mailgunEvent(baseOrder), undefined, String(nowSeconds() - 3_600)),
              ).then(statusOf),
            'mailgun replayed token with new data': () =>
              send(
                pool,
                '/webhooks/mailgun',
                mailgunBody(mailgunEvent(baseOrder, { event: 'delivered' }), mgToken, mgTimestamp),
              ).then(statusOf),
            'mailgun malformed JSON': () =>
              send(pool, '/webhooks/mailgun', '{"signature": {"token": "x"').then(statusOf),
            "mailgun other order's key, 1970, nonexistent order": () => {
              const token = randomBytes(25).toString('hex');
              spentTokens.push(token);
              const event = [
                mailgunEvent(baseOrder, {
                  'user-variables': { order_id: baseOrder, send_key: keyOf(otherOrder) },
                  message: { headers: { 'message-id': `${keyOf(otherOrder)}@mg.example.com` } },
                }),
                mailgunEvent('777', { timestamp: 1 }),
                mailgunEvent(baseOrder, { 'user-variables': { order_id: 'INV-77' } }),
              ][spentTokens.length % 3]!;
              return send(pool, '/webhooks/mailgun', mailgunBody(event, token)).then(statusOf);
            },
            'oversized body': () =>
              send(pool, '/webhooks/sendgrid', 'x'.repeat(MAX_BODY_BYTES * 3), signSendGrid('x')).then(
                statusOf,
                () => 'reset' as const,
              ),
            'oversized body, chunked (no length given)': () =>
              send(pool, '/webhooks/mailgun', Readable.from(chunks(MAX_BODY_BYTES * 3))).then(
                statusOf,
                () => 'reset' as const,
              ),
            'wrong content type': () =>
              send(pool, '/webhooks/mailgun', 'signature=x&token=y', {
                'content-type': 'application/x-www-form-urlencoded',
              }).then(statusOf),
            'not JSON at all, as text': () =>
              send(pool, '/webhooks/sendgrid', sgBody, { ...sgHeaders, 'content-type': 'text/plain' }).then(
                statusOf,
              ),
          };
          const expected: Record<string, (number | 'reset')[]> = {
            'sendgrid forged signature': [401],
            'sendgrid unsigned': [401],
            'sendgrid stale': [401],
            'sendgrid replayed': [409],
            'sendgrid malformed JSON, signed': [400],
            "sendgrid other order's key and message id": [200],
            "sendgrid strangers only, mixed with other orders' keys": [200],
            'mailgun forged signature': [401],
            'mailgun stale': [401],
            'mailgun replayed token with new data': [409],
            'mailgun malformed JSON': [400],
            "mailgun other order's key, 1970, nonexistent order": [200],
            'oversized body': [413, 'reset'],
            'oversized body, chunked (no length given)': [413, 'reset'],
            'wrong content type': [415],
            'not JSON at all, as text': [415],
          };
          const rounds = 200;
          const seen: Record<string, Record<string, number>> = {};
          const started = Date.now();
          // Slow bodies alongside: a request whose body never completes is cut off by the request timeout.
          const slow = Promise.all(Array.from({ length: 20 }, () => slowBody(url)));
          for (let round = 0; round < rounds; round++) {
            const answers = await Promise.all(
              Object.entries(kinds).map(async ([kind, make]) => [kind, await make()] as const),
            );
            for (const [kind, status] of answers) {
              seen[kind] ??= {};
              seen[kind][String(status)] = (seen[kind][String(status)] ?? 0) + 1;
            }
          }
          const slowOutcomes = await slow;
          const elapsedMs = Date.now() - started;
          const total = rounds * Object.keys(kinds).length + slowOutcomes.length;

          for (const [kind, statuses] of Object.entries(seen)) {
            expect(
              Object.keys(statuses).every((status) => expected[kind]!.map(String).includes(status)),
              kind,
            ).toBe(true);
          }
          expect(slowOutcomes.every((outcome) => outcome.closedWithinMs < REQUEST_TIMEOUT_MS + 3_000)).toBe(
            true,
          );

          const after = await snapshot();
          expect(after.events).toEqual(before.events);
          expect(after.deliveries).toEqual([...before.deliveries, ...spentTokens].sort());

          // Still answering: a genuine event after all that is stored.
          const afterOrder = await createOrder(admin);
          expect(await postMailgun(url, mailgunEvent(afterOrder))).toMatchObject({
            status: 200,
            body: { stored: 1 },
          });

          const memoryAfter = await memory(metricsUrl);
          fuzzFigures = [
            `webhook fuzz: ${total} bad requests (${rounds} rounds of ${Object.keys(kinds).length} kinds + ${slowOutcomes.length} slow bodies) in ${elapsedMs} ms`,
            `  answers by kind: ${JSON.stringify(seen)}`,
            `  slow bodies closed after ms: max ${Math.max(...slowOutcomes.map((o) => o.closedWithinMs))}`,
            `  receiver RSS ${mb(memoryBefore.rss)} -> ${mb(memoryAfter.rss)} MB, heap used ${mb(memoryBefore.heap)} -> ${mb(memoryAfter.heap)} MB`,
          ].join('\n');
          // Loosely: a receiver that kept bodies, tokens or sockets would grow by far more than this.
          expect(memoryAfter.rss - memoryBefore.rss).toBeLessThan(100 * 1_048_576);
          expect(memoryAfter.heap).toBeLessThan(150 * 1_048_576);
        } finally {
          await pool.close();
        }
      },
    );
  });

  async function snapshot(): Promise<{ events: string[]; deliveries: string[] }> {
    const events = await admin.query<{ row: string }>(
      'SELECT row_to_json(e)::text AS row FROM order_mail_provider_events AS e ORDER BY id',
    );
    const deliveries = await admin.query<{ token: string }>(
      'SELECT token FROM order_mail_webhook_deliveries ORDER BY token',
    );
    return {
      events: events.rows.map((row) => row.row),
      deliveries: deliveries.rows.map((row) => row.token).sort(),
    };
  }
});

// --- requests --------------------------------------------------------------------------------------------

const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const keyOf = (orderId: string): string => `order-confirmation/default/${orderId}/0`;
const mb = (bytes: number): string => (bytes / 1_048_576).toFixed(1);
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const statusOf = (answer: { status: number }): number => answer.status;

function sendGridEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    timestamp: nowSeconds(),
    event: 'processed',
    sg_event_id: `evt-${randomBytes(6).toString('hex')}`,
    sg_message_id: `sg-${orderId}.filter-0`,
    order_id: orderId,
    send_key: keyOf(orderId),
    ...overrides,
  };
}

function signSendGrid(body: string, timestamp = nowSeconds()): Record<string, string> {
  return {
    'x-twilio-email-event-webhook-signature': signer.signSendGrid(body, timestamp),
    'x-twilio-email-event-webhook-timestamp': String(timestamp),
  };
}

function mailgunEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    event: 'accepted',
    id: `mg-${randomBytes(6).toString('hex')}`,
    timestamp: Date.now() / 1000,
    message: { headers: { 'message-id': `${keyOf(orderId)}@mg.example.com` } },
    'user-variables': { order_id: orderId, send_key: keyOf(orderId) },
    ...overrides,
  };
}

function mailgunBody(
  eventData: Record<string, unknown>,
  token = randomBytes(25).toString('hex'),
  timestamp = String(nowSeconds()),
): string {
  const signature = mailgunSignature(signer.mailgunSigningKey, timestamp, token);
  return JSON.stringify({ signature: { timestamp, token, signature }, 'event-data': eventData });
}

/** A body streamed in 16 KiB chunks, so it goes chunked, with no Content-Length to refuse it by. */
async function* chunks(total: number): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < total; sent += 16_384) yield Buffer.alloc(16_384, 0x20);
}

async function send(pool: Pool, path: string, body: string | Readable, headers: Record<string, string> = {}) {
  const response = await pool.request({
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.body.text();
  return { status: response.statusCode, text };
}

async function postMailgun(url: string, eventData: Record<string, unknown>) {
  const response = await request(`${url}/webhooks/mailgun`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: mailgunBody(eventData),
    signal: AbortSignal.timeout(5_000),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

/** Headers and a few bytes of a 1000-byte body, then nothing: when does the server close it? */
function slowBody(url: string): Promise<{ closedWithinMs: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        'POST /webhooks/sendgrid HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n[{',
      );
    });
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ closedWithinMs: Date.now() - started }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept a slow body open for 30 s'));
    }, 30_000);
  });
}

async function memory(metricsUrl: string): Promise<{ rss: number; heap: number }> {
  const text = await (await fetch(metricsUrl)).text();
  const read = (name: string): number => Number(new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1]);
  return { rss: read('process_resident_memory_bytes'), heap: read('nodejs_heap_size_used_bytes') };
}

async function sqlState(db: Database, statement: string): Promise<string> {
  try {
    await db.query(statement);
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code ?? error);
  }
}
