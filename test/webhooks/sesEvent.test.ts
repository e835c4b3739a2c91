// The SES event inside an SNS Message, read without a server (src/webhooks/sesEvent.ts): where it was sent from
// (the sending account and the configuration set SES puts on every event) is kept with it, and an event that
// names neither cannot be tied to an attempt, so it is not ours.
import { describe, expect, it } from 'vitest';
import { sesTagValue } from '../../src/evidence/messageIdentity';
import { parseSesEvent } from '../../src/webhooks/sesEvent';

const SEND_KEY = 'order-confirmation/production/812/0';

function sendEvent(mail: Record<string, unknown>, tags: Record<string, string[]> = {}): string {
  return JSON.stringify({
    eventType: 'Send',
    mail: {
      timestamp: '2026-12-06T04:00:00.000Z',
      messageId: '0100018c-example-000000',
      ...mail,
      tags: {
        'ses:configuration-set': ['order-mail-events'],
        order_id: ['812'],
        send_key: [sesTagValue(SEND_KEY)],
        ...tags,
      },
    },
    send: {},
  });
}

describe('an SES event says where it was sent from', () => {
  it('keeps the sending account and the configuration set with the event', () => {
    expect(parseSesEvent(sendEvent({ sendingAccountId: '111122223333' }), 'sns-1')).toMatchObject({
      orderId: '812',
      sendKey: SEND_KEY,
      eventType: 'accepted',
      source: { account: '111122223333', configurationSet: 'order-mail-events' },
    });
  });

  it.each([
    ['no sending account', sendEvent({})],
    ['a sending account that is not an account id', sendEvent({ sendingAccountId: 'arn:aws:iam::1:root' })],
    [
      'no configuration set (a send that named none)',
      sendEvent({ sendingAccountId: '111122223333' }, { 'ses:configuration-set': [] }),
    ],
  ])('%s: not ours', (_, text) => {
    expect(parseSesEvent(text, 'sns-1')).toBe('not-ours');
  });
});
