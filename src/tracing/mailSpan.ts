// The span around one provider request. Never the recipient, sender, subject, text or a key: a span goes to
// whoever runs the collector (docs/operating.md, "Traces").
import { SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import type { SendResult } from '../shared/mailOutcome';

const tracer = trace.getTracer('order-confirmation-mail');

const MAIL_SPAN_ATTRIBUTES = {
  provider: 'mail.provider',
  orderId: 'order.id',
  outcome: 'mail.outcome',
  errorCode: 'mail.error_code',
  httpStatus: 'http.response.status_code',
  /** SMTP's SendResult carries the relay's reply code where HTTP's carries the status. */
  smtpReplyCode: 'mail.smtp.reply_code',
} as const;

export async function traceProviderRequest(
  name: 'mail.http.request' | 'mail.smtp.send',
  facts: { provider: string; orderId: string },
  request: () => Promise<SendResult>,
): Promise<SendResult> {
  return tracer.startActiveSpan(
    name,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [MAIL_SPAN_ATTRIBUTES.provider]: facts.provider,
        [MAIL_SPAN_ATTRIBUTES.orderId]: facts.orderId,
      },
    },
    async (span) => {
      try {
        const result = await request();
        span.setAttributes(resultAttributes(name, result));
        // An error status for what did not reach the provider for sure; a rejection is the provider's answer.
        if (result.outcome === 'not_sent' || result.outcome === 'unknown') {
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome });
        }
        return result;
      } catch (error) {
        // Its message may quote the mail: only the error's name.
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: error instanceof Error ? error.name : 'error',
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

function resultAttributes(name: string, result: SendResult): Attributes {
  const attributes: Attributes = { [MAIL_SPAN_ATTRIBUTES.outcome]: result.outcome };
  const code =
    name === 'mail.smtp.send' ? MAIL_SPAN_ATTRIBUTES.smtpReplyCode : MAIL_SPAN_ATTRIBUTES.httpStatus;
  if (result.httpStatus !== null) attributes[code] = result.httpStatus;
  if (result.outcome !== 'accepted' && result.errorCode !== null) {
    attributes[MAIL_SPAN_ATTRIBUTES.errorCode] = result.errorCode;
  }
  return attributes;
}
