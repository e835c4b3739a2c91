// The generic JSON mail API, which the sandbox speaks: POST {base}/v1/messages with a bearer token,
// 202 {"id": …} on acceptance. The shape an adopter's in-house mail gateway can implement.

import { GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, parseJsonObject, safeMessageId } from './adapterSupport';
import type { MailProviderAdapter } from './mailProvider';

export function createGenericAdapter(options: {
  apiKey: string;
  statusTable?: MailProviderAdapter['statusTable'];
}): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const authorization = `Bearer ${options.apiKey}`;
  return {
    name: 'generic',
    statusTable: options.statusTable ?? GENERIC_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/v1/messages',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        from: mail.from,
        to: mail.to,
        reply_to: mail.replyTo,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        metadata: { order_id: mail.orderId },
      }),
    }),
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.id),
    // Its error bodies are free text ({"error": "…"}): nothing documented to read.
    readProviderError: () => null,
  };
}
