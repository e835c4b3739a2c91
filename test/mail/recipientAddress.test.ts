// The recipient check's table (pure). What passes must be one mailbox for every transport; what fails says
// why without repeating the address.
import { describe, expect, it } from 'vitest';
import { recipientAddressProblem } from '../../src/mail/recipientAddress';

describe('recipientAddressProblem', () => {
  it.each([
    'taro@example.com',
    'taro.yamada+orders@mail.example.co.jp',
    "o'brien@example.com",
    'x@例え.jp',
    '  padded@example.com  ',
  ])('accepts %j', (address) => {
    expect(recipientAddressProblem(address)).toBeNull();
  });

  it.each<[string, RegExp]>([
    ['taro@example.com\r\nBcc: all@example.com', /line break/],
    ['taro@example.com\n', /line break/],
    ['taro@example.com, hanako@example.com', /list/],
    ['taro@example.com;hanako@example.com', /list/],
    ['Taro <taro@example.com>', /display name/],
    ['"taro"@example.com', /display name|quotes/],
    ['taro@[127.0.0.1]', /not a bare address/],
    ['taro @example.com', /spaces/],
    ['not-an-address', /exactly one @/],
    ['a@b@example.com', /exactly one @/],
    ['taro..yamada@example.com', /before the @/],
    [`${'x'.repeat(65)}@example.com`, /before the @/],
    [`taro@${'x'.repeat(250)}.com`, /longer than 254/],
    ['taro@localhost', /after the @/],
    ['taro@-example.com', /after the @/],
    ['taro@example.123', /after the @/],
    ['', /empty/],
  ])('refuses %j', (address, why) => {
    const problem = recipientAddressProblem(address);
    expect(problem).toMatch(why);
    const local = address.split('@')[0]!.trim();
    if (local.length > 3) expect(problem).not.toContain(local);
  });
});
