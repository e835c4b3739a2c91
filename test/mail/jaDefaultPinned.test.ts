// The Japanese mail, byte for byte as the hand-written template rendered it (7f78ebe): subject, text and HTML
// of each pinned order compared with the recorded files, never re-recorded by the test run (no -u can change them).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfirmationMail } from '../../src/mail/confirmationMail';
import { PINNED_CASES, PINNED_SUBJECT } from './jaDefaultOrders';

const FIXTURES = path.join(__dirname, 'fixtures', 'ja-default');

function pinned(name: string, part: 'subject.txt' | 'txt' | 'html'): string {
  return readFileSync(path.join(FIXTURES, `${name}.${part}`), 'utf8');
}

describe('the default Japanese mail, against the bytes recorded from 7f78ebe', () => {
  it.each(PINNED_CASES.map((pinnedCase) => [pinnedCase.name, pinnedCase] as const))(
    '%s: subject, text and HTML are the recorded bytes',
    (name, { order, replyTo }) => {
      const mail = renderConfirmationMail(order, {
        from: 'Shop <shop@example.com>',
        replyTo,
        subject: PINNED_SUBJECT,
      });
      expect(mail.subject).toBe(pinned(name, 'subject.txt'));
      expect(mail.text).toBe(pinned(name, 'txt'));
      expect(mail.html).toBe(pinned(name, 'html'));
    },
  );
});
