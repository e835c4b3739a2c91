// Amazon SES API v2 as the sandbox plays it: POST /v2/email/outbound-emails, a JSON SendEmail request signed
// with SigV4 (checked for real, providers/sigv4.ts: access key
// SANDBOX_AWS_ACCESS_KEY_ID, the sandbox's API key as the secret, region SANDBOX_SES_REGION, service "ses");
// 200 {"MessageId"}; errors carry their name in x-amzn-ErrorType and {"message"} in the body (whose text
// echoes what it was sent, as AWS's does). Accepted messages publish Send and Delivery (or Bounce) events
// through the sandbox's SNS (webhooks.ts).
import { isPlausibleAddress } from '../messageValidation';
import { SES_SEND_PATH, SES_SIGNING_SERVICE, SES_TAGS, sendKeyOfSesTag } from '../providerFormats';
import { jsonObject, nonEmptyString, type ProviderAnswer, type ProviderEmulation } from './emulation';
import { checkSigV4 } from './sigv4';

export const SANDBOX_AWS_ACCESS_KEY_ID = 'AKIASANDBOXEXAMPLE01';
export const SANDBOX_SES_REGION = 'us-east-1';
/** The AWS account the sandbox's SES sends from: every event it publishes names it (mail.sendingAccountId). */
export const SANDBOX_AWS_ACCOUNT_ID = '000000000000';
/** The configuration set the sandbox's SES events name (the tests' SES_CONFIGURATION_SET). */
export const SANDBOX_SES_CONFIGURATION_SET = 'order-mail-events';

const DEFAULT_ERRORS: Readonly<Record<number, string>> = {
  400: 'BadRequestException',
  403: 'AccessDeniedException',
  404: 'NotFoundException',
  429: 'TooManyRequestsException',
  500: 'InternalFailure',
  503: 'ServiceUnavailable',
};

export function sesFailure(status: number, name: string, message: string): ProviderAnswer {
  return {
    status,
    body: { message },
    headers: { 'x-amzn-errortype': `${name}:http://internal.amazon.com/coral/com.amazonaws.sesv2/` },
  };
}

export const sesEmulation: ProviderEmulation = {
  name: 'ses',
  servesPath: (pathname) => pathname === SES_SEND_PATH,
  authenticate(headers, apiKey, request) {
    const problem = checkSigV4(
      {
        method: request?.method ?? 'POST',
        url: request?.url ?? SES_SEND_PATH,
        headers,
        body: request?.body ?? '',
      },
      {
        accessKeyId: SANDBOX_AWS_ACCESS_KEY_ID,
        secretAccessKey: apiKey,
        region: SANDBOX_SES_REGION,
        service: SES_SIGNING_SERVICE,
      },
      request?.now ?? new Date(),
    );
    return problem === null ? null : sesFailure(problem.status, problem.code, problem.message);
  },
  parse(raw) {
    const body = jsonObject(raw);
    if (body === null)
      return { ok: false, orderId: null, answer: sesFailure(400, 'BadRequestException', 'Invalid JSON') };
    const tags = Array.isArray(body.EmailTags)
      ? (body.EmailTags as Array<{ Name?: unknown; Value?: unknown }>)
      : [];
    const tag = (name: string) => nonEmptyString(tags.find((entry) => entry.Name === name)?.Value);
    const orderId = tag(SES_TAGS.orderId);
    const sendKeyTag = tag(SES_TAGS.sendKey);
    const to = nonEmptyString(
      (body.Destination as { ToAddresses?: unknown[] } | undefined)?.ToAddresses?.[0],
    );
    const from = nonEmptyString(body.FromEmailAddress);
    const simple = (body.Content as { Simple?: Record<string, unknown> } | undefined)?.Simple;
    const subject = nonEmptyString((simple?.Subject as { Data?: unknown } | undefined)?.Data);
    const parts = simple?.Body as { Text?: { Data?: unknown }; Html?: { Data?: unknown } } | undefined;
    const text = nonEmptyString(parts?.Text?.Data);
    const html = nonEmptyString(parts?.Html?.Data);
    for (const [field, value] of [
      ['FromEmailAddress', from],
      ['Destination.ToAddresses', to],
      ['Content.Simple.Subject', subject],
      ['Content.Simple.Body', text ?? html],
      [`EmailTags ${SES_TAGS.orderId}`, orderId],
    ] as const) {
      if (value === null) {
        return { ok: false, orderId, answer: sesFailure(400, 'BadRequestException', `Missing ${field}`) };
      }
    }
    // The sandbox's account has one configuration set, whose name its events carry: SES refuses any other.
    if (
      body.ConfigurationSetName !== undefined &&
      body.ConfigurationSetName !== SANDBOX_SES_CONFIGURATION_SET
    ) {
      return {
        ok: false,
        orderId,
        answer: sesFailure(
          404,
          'NotFoundException',
          `Configuration set <${JSON.stringify(body.ConfigurationSetName)}> does not exist.`,
        ),
      };
    }
    if (!isPlausibleAddress(to!)) {
      return {
        ok: false,
        orderId,
        answer: sesFailure(
          400,
          'MessageRejected',
          `Email address is not verified. The following identities failed the check: ${to!}`,
        ),
      };
    }
    const replyTo = (body.ReplyToAddresses as unknown[] | undefined)?.[0];
    return {
      ok: true,
      message: {
        orderId: orderId!,
        to: to!,
        from: from!,
        replyTo: nonEmptyString(replyTo),
        subject: subject!,
        text: text ?? '',
        html,
        sendKey: sendKeyTag === null ? null : sendKeyOfSesTag(sendKeyTag),
      },
      idempotencyKey: null,
    };
  },
  // SES's ids look like 0100018c…-…-000000.
  messageId: (sequence) =>
    `0100018c${sequence.toString(16).padStart(8, '0')}-5b1d-4c6e-9f00-sandbox00000-000000`,
  accepted: (id) => ({ status: 200, body: { MessageId: id } }),
  error: (status, providerError) =>
    sesFailure(status, providerError ?? DEFAULT_ERRORS[status] ?? 'InternalFailure', 'injected fault'),
};
