// Postmark, single email: POST https://api.postmarkapp.com/email with the X-Postmark-Server-Token header
// (postmarkapp.com/developer/user-guide/send-email-with-api). Accepted is 200
// {"To","SubmittedAt","MessageID","ErrorCode":0,"Message":"OK"}; errors carry {"ErrorCode": n, "Message"}.

import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, parseJsonObject, safeMessageId } from './adapterSupport';
import type { MailProviderAdapter } from './mailProvider';

/**
 * Postmark's documented statuses (postmarkapp.com/developer/api/overview): 401 missing or wrong token,
 * 404, 413 over 10 MB, 422 "something with the message isn't quite right" with an ErrorCode (300 invalid
 * request, 406 inactive recipient, …): rejected. 429: not sent. 500 is a fault on Postmark's side; their
 * wording is that the message is lost "in most cases", so not always: unknown. ErrorCode 100 is
 * "Maintenance": nothing was processed, whatever status carries it, so it is not sent and worth retrying.
 */
export const POSTMARK_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'postmark',
  {},
  { label: 'Postmark', byProviderError: { 'ErrorCode 100': 'not_sent' } },
);

export const DEFAULT_POSTMARK_MESSAGE_STREAM = 'outbound';

export function createPostmarkAdapter(options: {
  apiKey: string;
  messageStream?: string;
}): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const token = options.apiKey;
  const messageStream = options.messageStream ?? DEFAULT_POSTMARK_MESSAGE_STREAM;
  return {
    name: 'postmark',
    statusTable: POSTMARK_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/email',
      headers: {
        'x-postmark-server-token': token,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({
        From: mail.from,
        To: mail.to,
        ...(mail.replyTo === null ? {} : { ReplyTo: mail.replyTo }),
        Subject: mail.subject,
        TextBody: mail.text,
        HtmlBody: mail.html,
        MessageStream: messageStream,
        Metadata: { order_id: mail.orderId },
      }),
    }),
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.MessageID),
    readProviderError: (_status, body) => {
      const code = parseJsonObject(body)?.ErrorCode;
      // A number is all we take; the Message beside it can quote the recipient.
      return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code < 100_000
        ? `ErrorCode ${code}`
        : null;
    },
  };
}
