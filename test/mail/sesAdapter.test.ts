// The SES v2 adapter over real HTTP against the sandbox's SES emulation, which checks each SigV4 signature with
// an implementation of its own (packages/sandbox/src/providers/sigv4.ts): the request it sends, the outcome
// table's rows the status tests do not cover (signature refused, dropped connections, credentials that cannot
// be had), the destination it records, and container credentials fetched from a loopback agent.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  SANDBOX_AWS_ACCESS_KEY_ID,
  SANDBOX_AWS_ACCOUNT_ID,
  SANDBOX_SES_REGION,
} from '../../packages/sandbox/src/providers/ses';
import { credentialFingerprint } from '../../src/evidence/destination';
import { DEFAULT_DEPLOYMENT_ID, sendKeyOfSesTag } from '../../src/evidence/messageIdentity';
import { createMailTransport, type SesSettings } from '../../src/mail/createMailTransport';
import { createHttpMailTransport } from '../../src/mail/httpMailTransport';
import { orderConfirmationSendKey } from '../../src/mail/sendKey';
import { createAwsCredentialProvider } from '../../src/mail/providers/awsCredentials';
import { createSesAdapter, SES_SIGNATURE_TIME_ERROR } from '../../src/mail/providers/ses';
import { outcomeForStatus } from '../../src/mail/sendOutcomeTable';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import { TEST_SES_CONFIGURATION_SET, testSesSettings } from '../support/testKit';

const SECRET = 'ses-sandbox-secret-1';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandbox(): Promise<MailSandbox> {
  const started = await startMailSandbox({ apiKey: SECRET });
  cleanups.push(() => started.close());
  return started;
}

function sesClient(baseUrl: string, ses: SesSettings = testSesSettings(SECRET)): MailTransport {
  const transport = createMailTransport({
    provider: 'ses',
    baseUrl,
    apiKey: '',
    mailgunDomain: null,
    postmarkMessageStream: 'outbound',
    ses,
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 2,
  });
  cleanups.push(() => transport.close());
  return transport;
}

function mail(orderId: string, overrides: Partial<OutgoingMail> = {}): OutgoingMail {
  return {
    orderId,
    to: 'customer@example.com',
    from: 'ショップ <shop@example.com>',
    replyTo: 'support@example.com',
    subject: 'ご注文ありがとうございます',
    text: `ご注文番号: ${orderId}\n`,
    html: `<p>ご注文番号: ${orderId}</p>`,
    sendKey: orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 0),
    ...overrides,
  };
}

describe('SES v2 against the sandbox', () => {
  it('accepted: a signed POST /v2/email/outbound-emails with the configuration set and the send key as a tag; the MessageId is kept', async () => {
    const api = await sandbox();
    const sent = mail('801');
    const result = await sesClient(api.url).send(sent);
    const messages = api.messages();
    expect(messages).toHaveLength(1);
    expect(result).toEqual({ outcome: 'accepted', httpStatus: 200, providerMessageId: messages[0]!.id });
    // The sandbox decoded the tag back into the very key the claim gave the mail.
    expect(messages[0]).toMatchObject({ provider: 'ses', orderId: '801', sendKey: sent.sendKey });
    expect(messages[0]!.from).toBe('=?UTF-8?B?44K344On44OD44OX?= <shop@example.com>');
    expect(sendKeyOfSesTag(Buffer.from(sent.sendKey!).toString('base64url'))).toBe(sent.sendKey);
  });

  it('a wrong secret key: the sandbox recomputes the signature, 403 SignatureDoesNotMatch, rejected and nothing held', async () => {
    const api = await sandbox();
    const result = await sesClient(api.url, testSesSettings('not-the-secret')).send(mail('802'));
    expect(result).toMatchObject({
      outcome: 'rejected',
      httpStatus: 403,
      errorCode: 'SignatureDoesNotMatch',
    });
    expect(JSON.stringify(result)).not.toContain('not-the-secret');
    expect(api.messages()).toEqual([]);
  });

  it.each([
    ['behind', -10],
    ['ahead', 10],
  ])(
    'a request signed with a clock 10 minutes %s is refused for its time: not sent (retried), never rejected, nothing held',
    async (_direction, minutes) => {
      const api = await sandbox();
      const adapter = createSesAdapter({
        region: SANDBOX_SES_REGION,
        configurationSet: TEST_SES_CONFIGURATION_SET,
        credentials: async () => ({ accessKeyId: SANDBOX_AWS_ACCESS_KEY_ID, secretAccessKey: SECRET }),
        now: () => new Date(Date.now() + minutes * 60_000),
      });
      const transport = createHttpMailTransport({
        adapter,
        baseUrl: api.url,
        connectTimeoutMs: 1_000,
        headersTimeoutMs: 1_000,
        overallTimeoutMs: 3_000,
        connections: 1,
      });
      cleanups.push(() => transport.close());
      const result = await transport.send(mail('803'));
      expect(result).toMatchObject({
        outcome: 'not_sent',
        httpStatus: 403,
        errorCode: SES_SIGNATURE_TIME_ERROR,
      });
      expect(api.messages()).toEqual([]);
    },
  );

  it("AWS's signature-time refusals, as its services word them, are not sent; a wrong signature stays rejected", () => {
    const adapter = createSesAdapter({
      region: SANDBOX_SES_REGION,
      configurationSet: TEST_SES_CONFIGURATION_SET,
      credentials: async () => ({ accessKeyId: SANDBOX_AWS_ACCESS_KEY_ID, secretAccessKey: SECRET }),
    });
    const outcome = (status: number, type: string, message: string) =>
      outcomeForStatus(
        status,
        adapter.statusTable,
        adapter.readProviderError(status, JSON.stringify({ message }), { 'x-amzn-errortype': type }),
      );
    const expired =
      'Signature expired: 20261206T040000Z is now earlier than 20261206T041000Z (20261206T041500Z - 5 min.)';
    const early =
      'Signature not yet current: 20261206T042000Z is still later than 20261206T041000Z (20261206T040500Z + 5 min.)';
    expect([
      outcome(403, 'InvalidSignatureException:http://internal.amazon.com/', expired),
      outcome(400, 'InvalidSignatureException', early),
      outcome(403, 'SignatureDoesNotMatch', expired),
      outcome(
        403,
        'RequestTimeTooSkewed',
        'The difference between the request time and the current time is too large.',
      ),
      outcome(400, 'RequestExpired', 'Request has expired.'),
    ]).toEqual(['not_sent', 'not_sent', 'not_sent', 'not_sent', 'not_sent']);
    expect(
      outcome(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided.',
      ),
    ).toBe('rejected');
  });

  it('a configuration set the account does not have: 404 NotFound, rejected, nothing held', async () => {
    const api = await sandbox();
    const result = await sesClient(api.url, {
      ...testSesSettings(SECRET),
      configurationSet: 'staging-events',
    }).send(mail('805'));
    expect(result).toMatchObject({ outcome: 'rejected', httpStatus: 404, errorCode: 'NotFound' });
    expect(api.messages()).toEqual([]);
  });

  it('an address SES refuses: 400 MessageRejected, a definite refusal that names why and not the address', async () => {
    const api = await sandbox();
    const result = await sesClient(api.url).send(mail('804', { to: 'not-an-address@nowhere' }));
    expect(result).toMatchObject({ outcome: 'rejected', httpStatus: 400, errorCode: 'MessageRejected' });
    if (result.outcome === 'rejected') expect(result.reason).toContain('(MessageRejected)');
    expect(JSON.stringify(result)).not.toContain('not-an-address');
    expect(api.messages()).toEqual([]);
  });

  it('the connection dropped after SES took the request: unknown (the message is held)', async () => {
    const api = await sandbox();
    api.queueFault('805', { kind: 'accept-then-drop' });
    const result = await sesClient(api.url).send(mail('805'));
    expect(result.outcome).toBe('unknown');
    expect(api.messagesFor('805')).toHaveLength(1);
  });

  it('the connection dropped after the request started, nothing taken: still unknown, we cannot tell', async () => {
    const api = await sandbox();
    api.queueFault('806', { kind: 'drop-without-processing' });
    const result = await sesClient(api.url).send(mail('806'));
    expect(result.outcome).toBe('unknown');
    expect(api.messagesFor('806')).toEqual([]);
  });

  it('credentials that cannot be had: not sent, and no request was made', async () => {
    const api = await sandbox();
    const result = await sesClient(api.url, {
      ...testSesSettings(SECRET),
      credentialProvider: () => Promise.reject(new Error('the agent is down')),
    }).send(mail('807'));
    expect(result).toMatchObject({
      outcome: 'not_sent',
      httpStatus: null,
      errorCode: 'CREDENTIALS_UNAVAILABLE',
    });
    expect(api.requests()).toEqual([]);
  });

  it('records where it went: provider ses, the endpoint origin, region/configuration set, a fingerprint of the access key id, the sending account', async () => {
    const api = await sandbox();
    const transport = sesClient(api.url);
    expect(transport.destination).toEqual({
      provider: 'ses',
      origin: api.url,
      scope: `${SANDBOX_SES_REGION}/${TEST_SES_CONFIGURATION_SET}`,
      credentialFingerprint: credentialFingerprint(`aws-access-key:${SANDBOX_AWS_ACCESS_KEY_ID}`),
      account: SANDBOX_AWS_ACCOUNT_ID,
    });
    expect(JSON.stringify(transport.destination)).not.toContain(SECRET);
  });

  it('container credentials: temporary keys from the agent at AWS_CONTAINER_CREDENTIALS_FULL_URI sign the request', async () => {
    const api = await sandbox();
    let fetched = 0;
    let authorization: string | undefined;
    const agent: Server = createServer((req, res) => {
      fetched += 1;
      authorization = req.headers.authorization;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          AccessKeyId: SANDBOX_AWS_ACCESS_KEY_ID,
          SecretAccessKey: SECRET,
          Token: 'session-token-from-the-agent',
          Expiration: new Date(Date.now() + 3_600_000).toISOString(),
        }),
      );
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => agent.close(() => resolve())));
    const source = {
      kind: 'container' as const,
      fullUri: `http://127.0.0.1:${(agent.address() as AddressInfo).port}/v2/credentials`,
      relativeUri: null,
      authorizationToken: 'agent-token',
      authorizationTokenFile: null,
    };
    const ses: SesSettings = {
      ...testSesSettings(SECRET),
      credentials: source,
      credentialProvider: createAwsCredentialProvider(source, { region: SANDBOX_SES_REGION }),
    };
    const transport = sesClient(api.url, ses);
    expect((await transport.send(mail('808'))).outcome).toBe('accepted');
    expect((await transport.send(mail('809'))).outcome).toBe('accepted');
    // Cached until shortly before they expire: one fetch for both sends.
    expect(fetched).toBe(1);
    expect(authorization).toBe('agent-token');
    expect(api.messages()).toHaveLength(2);
  });
});
