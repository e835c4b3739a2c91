// The worker image's node_modules, slimmed by scripts/prune-image-modules.mjs as the Dockerfile does it: a real
// production install (`npm ci --omit=dev` into a temporary folder), pruned for this machine's architecture,
// with the compiled product and its prebuilt workflow bundle beside it. No Docker engine runs here, so this is
// the image's file tree run natively. From it: three workers (the generic API with traces over OTLP, Amazon SES
// with SigV4, SMTP) each send an order's mail end to end on the stack, and the webhook receiver takes a signed
// delivery. A package the prune took that one of them needs fails here.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { arch, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import {
  SANDBOX_AWS_ACCESS_KEY_ID,
  SANDBOX_AWS_ACCOUNT_ID,
  SANDBOX_SES_REGION,
} from '../../packages/sandbox/src/providers/ses';
import { getFreePorts } from '../../dev/stack/freePorts';
import { startManagedProcess, type ManagedProcess } from '../../dev/stack/managedProcess';
import { parseEnvFile, PROJECT_ROOT } from '../../dev/stack/stackSettings';
import { stackWorkerEnvironment, waitUntilReady } from '../../dev/stack/workerFleet';
import { startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { buildProduct, type BuiltProduct } from '../support/builtProduct';
import { createOrder, TEST_SES_CONFIGURATION_SET } from '../support/testKit';
import { startTestStack, type TestStack } from './stackKit';

const run = promisify(execFile);
const IMAGE_ARCH = arch() === 'arm64' ? 'arm64' : 'amd64';
const BRIDGE_TARGET = IMAGE_ARCH === 'arm64' ? 'aarch64-unknown-linux-gnu' : 'x86_64-unknown-linux-gnu';

let product: BuiltProduct;
let app: string;
let sizes: { before: number; after: number };
let testStack: TestStack;
let smtp: SmtpSandbox;
let collector: { server: Server; url: string; posts: { contentType: string; bytes: number }[] };
const processes: ManagedProcess[] = [];

async function bytesOf(directory: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', directory]);
  return Number(stdout.split('\t')[0]);
}

beforeAll(async () => {
  // The Dockerfile's build stage: dist/ and the workflow bundle, made with the full install.
  product = await buildProduct();
  await run(process.execPath, ['dist/cli/bundle-workflows.js', 'dist/workflow-bundle.js'], {
    cwd: product.directory,
  });
  // Its dependencies stage: a production install, then the prune.
  app = await mkdtemp(path.join(tmpdir(), 'image-modules-'));
  for (const file of ['package.json', 'package-lock.json']) {
    await cp(path.join(PROJECT_ROOT, file), path.join(app, file));
  }
  await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], { cwd: app, timeout: 280_000 });
  const before = await bytesOf(path.join(app, 'node_modules'));
  await run(process.execPath, [
    path.join(PROJECT_ROOT, 'scripts', 'prune-image-modules.mjs'),
    app,
    IMAGE_ARCH,
  ]);
  sizes = { before, after: await bytesOf(path.join(app, 'node_modules')) };
  await cp(path.join(product.directory, 'dist'), path.join(app, 'dist'), { recursive: true });

  testStack = await startTestStack({ workers: 0, uiPort: null });
  smtp = await startSmtpSandbox();
  const posts: { contentType: string; bytes: number }[] = [];
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        posts.push({ contentType: req.headers['content-type'] ?? '', bytes });
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  collector = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts };
}, 600_000);

afterAll(async () => {
  await Promise.all(processes.map((child) => child.stop({ graceMs: 90_000 })));
  await new Promise((resolve) => collector?.server.close(resolve));
  await smtp?.close();
  await testStack?.close();
  await product?.remove();
  if (app !== undefined) await rm(app, { recursive: true, force: true });
});

/** A process of the slimmed tree, as the image's CMD runs it: node, in the app folder, nothing else. */
function startFromImage(name: string, script: string, env: Record<string, string>): ManagedProcess {
  const child = startManagedProcess({
    name,
    command: process.execPath,
    args: [script],
    cwd: app,
    env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), NODE_ENV: 'production', ...env },
    logFile: path.join(app, `${name}.log`),
  });
  processes.push(child);
  return child;
}

async function startWorker(name: string, env: Record<string, string>): Promise<void> {
  const [port = 0] = await getFreePorts(1, '127.0.0.1');
  const child = startFromImage(name, 'dist/worker.js', {
    ...stackWorkerEnvironment(testStack.stack.connections, `127.0.0.1:${port}`),
    ...env,
    // The image's ENV: the prebuilt bundle, never the bundler.
    WORKFLOW_BUNDLE_PATH: path.join(app, 'dist', 'workflow-bundle.js'),
    TEMPORAL_TASK_QUEUE: `image-${name}`,
    WORKER_HTTP_BIND_ADDRESS: `127.0.0.1:${port}`,
  });
  await waitUntilReady(
    { index: 0, httpUrl: `http://127.0.0.1:${port}`, process: child },
    Date.now() + 120_000,
  );
}

async function sendOne(taskQueue: string): Promise<string> {
  const orderId = await createOrder(testStack.db);
  await startOrderConfirmationMail(testStack.client, orderId, { taskQueue });
  const result: unknown = await testStack.client.workflow.getHandle(orderId).result();
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
  expect(await readMailLog(testStack.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  return orderId;
}

describe('the image node_modules after scripts/prune-image-modules.mjs', () => {
  it("is smaller, holds this architecture's native module alone, and the bundler only as stubs", async () => {
    expect(sizes.after).toBeLessThan(sizes.before / 3);
    const bridge = path.join(app, 'node_modules', '@temporalio', 'core-bridge', 'releases');
    expect(await readdir(bridge)).toEqual([BRIDGE_TARGET]);
    const { stdout } = await run('find', [path.join(app, 'node_modules'), '-name', '*.node']);
    expect(stdout.trim().split('\n')).toEqual([path.join(bridge, BRIDGE_TARGET, 'index.node')]);
    // Loading the worker package still works; calling the bundler says why it cannot.
    const probe = await run(
      process.execPath,
      [
        '-e',
        "require('@temporalio/worker'); try { require('webpack').webpack({}) } catch (e) { console.log(e.message) }",
      ],
      { cwd: app },
    );
    expect(probe.stdout).toContain('webpack is not in this image');
  });

  it("a worker with the Kubernetes ConfigMap's settings sends over the generic API and exports its spans over OTLP (HTTP/protobuf)", async () => {
    // deploy/kubernetes/base/worker.env as the pod gets it (its empty values included: empty = the default),
    // with this stack's addresses and a collector on top.
    const configMap = parseEnvFile(
      await readFile(path.join(PROJECT_ROOT, 'deploy', 'kubernetes', 'base', 'worker.env'), 'utf8'),
    );
    await startWorker('generic', {
      ...configMap,
      ...stackWorkerEnvironment(testStack.stack.connections, '127.0.0.1:0'),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
    });
    const orderId = await sendOne('image-generic');
    expect(testStack.stack.sandbox.messagesFor(orderId)).toHaveLength(1);
    const deadline = Date.now() + 30_000;
    while (collector.posts.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    expect(collector.posts.length).toBeGreaterThan(0);
    expect(collector.posts[0]).toMatchObject({ contentType: 'application/x-protobuf' });
    expect(collector.posts[0]!.bytes).toBeGreaterThan(0);
  });

  it('a worker sends through Amazon SES, its requests SigV4-signed (the sandbox checks each signature)', async () => {
    await startWorker('ses', {
      MAIL_PROVIDER: 'ses',
      AWS_REGION: SANDBOX_SES_REGION,
      AWS_ACCESS_KEY_ID: SANDBOX_AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: testStack.stack.connections.mailApiKey,
      SES_CONFIGURATION_SET: TEST_SES_CONFIGURATION_SET,
      SES_ACCOUNT_ID: SANDBOX_AWS_ACCOUNT_ID,
      MAIL_API_KEY: '',
    });
    const orderId = await sendOne('image-ses');
    expect(testStack.stack.sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a worker sends over SMTP (nodemailer)', async () => {
    await startWorker('smtp', {
      MAIL_PROVIDER: 'smtp',
      SMTP_HOST: smtp.host,
      SMTP_PORT: String(smtp.port),
      SMTP_STARTTLS: 'off',
      MAIL_API_BASE_URL: '',
      MAIL_API_KEY: '',
    });
    const orderId = await sendOne('image-smtp');
    expect(smtp.messagesFor(orderId)).toHaveLength(1);
  });

  it('the webhook receiver runs under its own login and takes a signed Mailgun delivery, refusing a forged one', async () => {
    const login = (user: string): string => {
      const url = new URL(testStack.stack.databaseUrl);
      url.username = user;
      url.password = randomBytes(18).toString('base64url');
      return url.toString();
    };
    const webhookUrl = login('image_test_hooks');
    await run(process.execPath, ['dist/cli/db-roles.js'], {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        ADMIN_DATABASE_URL: testStack.stack.databaseUrl,
        MIGRATION_DATABASE_URL: login('image_test_migrator'),
        DATABASE_URL: login('image_test_worker'),
        WEBHOOK_DATABASE_URL: webhookUrl,
      },
    });
    const [port = 0, metricsPort = 0] = await getFreePorts(2, '127.0.0.1');
    const signingKey = randomBytes(16).toString('hex');
    const receiver = startFromImage('webhooks', 'dist/cli/webhooks.js', {
      WEBHOOK_DATABASE_URL: webhookUrl,
      WEBHOOK_BIND_ADDRESS: `127.0.0.1:${port}`,
      WEBHOOK_METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}`,
      MAILGUN_WEBHOOK_SIGNING_KEY: signingKey,
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const exited = receiver.exitDescription();
      if (exited !== null) throw new Error(`${exited}:\n${receiver.output()}`);
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`receiver not ready:\n${receiver.output()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const delivery = (key: string): string => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const token = randomBytes(25).toString('hex');
      return JSON.stringify({
        signature: { timestamp, token, signature: mailgunSignature(key, timestamp, token) },
        // Someone else's event: signed, so taken, and skipped as not ours.
        'event-data': {
          event: 'delivered',
          id: `mg-${randomBytes(6).toString('hex')}`,
          timestamp: Date.now() / 1000,
          message: { headers: { 'message-id': 'someone-else@mg.example.com' } },
          'user-variables': {},
        },
      });
    };
    const post = (body: string) =>
      fetch(`${url}/webhooks/mailgun`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    expect((await post(delivery(signingKey))).status).toBe(200);
    expect((await post(delivery('not-the-key'))).status).toBe(401);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(
      /order_mail_webhook_events_total\{provider="mailgun",result="skipped_not_ours"\} 1\b/,
    );
  });
});
