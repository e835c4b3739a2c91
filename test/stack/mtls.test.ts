// mTLS on the stack's server, with a CA and certificates this test makes with openssl: the worker process
// and the client connect through envconfig's TEMPORAL_TLS_* variables (as they would to Temporal Cloud or a
// secured cluster), and a connection without a client certificate, or with one from another CA, is refused.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrderConfirmationMail } from '../../src/client';
import { loadTemporalConnectionConfig } from '../../src/config/temporalConnection';
import { readMailLog } from '../../src/db/orderMailLog';
import type { StackTlsFiles } from '../../dev/stack/stack';
import { createOrder } from '../support/testKit';
import { clientEnvironment, startTestStack, type TestStack } from './stackKit';

const run = promisify(execFile);

let certificates: string;
let tls: StackTlsFiles;
let strangerCert: { cert: string; key: string };
let testStack: TestStack;

beforeAll(async () => {
  certificates = await mkdtemp(path.join(tmpdir(), 'stack-mtls-'));
  tls = await makeCertificates(certificates);
  strangerCert = await makeStrangerClientCertificate(certificates);
  testStack = await startTestStack({ workers: 1, uiPort: null, tls });
});
afterAll(async () => {
  await testStack?.close();
  await rm(certificates, { recursive: true, force: true });
});

describe('mTLS between the workers, the clients and the Temporal server', () => {
  it('a worker and a client with certificates run an order through', async () => {
    // The worker process connected with the certificates from TEMPORAL_TLS_*, or it would not be ready.
    expect(testStack.stack.workers?.workers).toHaveLength(1);
    // The client read the same variables (src/config/temporalConnection.ts).
    expect(loadTemporalConnectionConfig(clientEnvironment(testStack.stack)).description).toContain('mTLS');
    const orderId = await createOrder(testStack.db);
    await startOrderConfirmationMail(testStack.client, orderId);
    expect(await testStack.client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
    expect(testStack.stack.sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(testStack.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  });

  it('refuses a client that trusts the server but presents no certificate', async () => {
    const serverRootCACertificate = await readFile(tls.caCertFile);
    await expect(
      Connection.connect({
        address: testStack.stack.temporalAddress,
        tls: { serverRootCACertificate, serverNameOverride: tls.serverName },
        connectTimeout: '4 seconds',
      }),
    ).rejects.toThrow();
    // The worker side (the Rust core's connection) is refused the same way.
    await expect(
      NativeConnection.connect({
        address: testStack.stack.temporalAddress,
        tls: { serverRootCACertificate, serverNameOverride: tls.serverName },
      }),
    ).rejects.toThrow();
  });

  it('refuses a certificate from another CA, and plaintext', async () => {
    await expect(
      Connection.connect({
        address: testStack.stack.temporalAddress,
        tls: {
          serverRootCACertificate: await readFile(tls.caCertFile),
          serverNameOverride: tls.serverName,
          clientCertPair: { crt: await readFile(strangerCert.cert), key: await readFile(strangerCert.key) },
        },
        connectTimeout: '4 seconds',
      }),
    ).rejects.toThrow();
    await expect(
      Connection.connect({ address: testStack.stack.temporalAddress, connectTimeout: '4 seconds' }),
    ).rejects.toThrow();
  });
});

/** A CA, a server certificate for localhost / 127.0.0.1 (also its client certificate between its services), and a client certificate. */
async function makeCertificates(directory: string): Promise<StackTlsFiles> {
  const file = (name: string) => path.join(directory, name);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=order-mail test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
  ]);
  await signedCertificate(directory, 'server', '/CN=localhost', [
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    // The server's services also dial each other and the frontend with this certificate.
    'extendedKeyUsage=serverAuth,clientAuth',
  ]);
  await signedCertificate(directory, 'client', '/CN=order-mail-worker', ['extendedKeyUsage=clientAuth']);
  return {
    caCertFile: file('ca.pem'),
    serverCertFile: file('server.pem'),
    serverKeyFile: file('server.key'),
    clientCertFile: file('client.pem'),
    clientKeyFile: file('client.key'),
    serverName: 'localhost',
  };
}

/** A client certificate signed by a CA the server does not trust. */
async function makeStrangerClientCertificate(directory: string): Promise<{ cert: string; key: string }> {
  const file = (name: string) => path.join(directory, name);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=stranger CA',
    '-keyout',
    file('stranger-ca.key'),
    '-out',
    file('stranger-ca.pem'),
  ]);
  await openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=stranger',
    '-keyout',
    file('stranger.key'),
    '-out',
    file('stranger.csr'),
  ]);
  await writeFile(file('stranger.ext'), 'extendedKeyUsage=clientAuth\n');
  await openssl([
    'x509',
    '-req',
    '-in',
    file('stranger.csr'),
    '-CA',
    file('stranger-ca.pem'),
    '-CAkey',
    file('stranger-ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('stranger.ext'),
    '-out',
    file('stranger.pem'),
  ]);
  return { cert: file('stranger.pem'), key: file('stranger.key') };
}

async function signedCertificate(
  directory: string,
  name: string,
  subject: string,
  extensions: string[],
): Promise<void> {
  const file = (suffix: string) => path.join(directory, `${name}.${suffix}`);
  await openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    subject,
    '-keyout',
    file('key'),
    '-out',
    file('csr'),
  ]);
  await writeFile(file('ext'), `${extensions.join('\n')}\n`);
  await openssl([
    'x509',
    '-req',
    '-in',
    file('csr'),
    '-CA',
    path.join(directory, 'ca.pem'),
    '-CAkey',
    path.join(directory, 'ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('ext'),
    '-out',
    file('pem'),
  ]);
}

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args);
}
