// The operator CLI's grammar alone (pure): what an operator's typo turns into.
import { describe, expect, it } from 'vitest';
import { parseOpsCommand, UsageError } from '../../src/ops/opsCommand';

function usageErrorOf(argv: string[]): UsageError {
  try {
    parseOpsCommand(argv);
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error(`parsed without an error: ${argv.join(' ')}`);
}

describe('parseOpsCommand', () => {
  it('a negative order id is an invalid order id, not an unknown option', () => {
    for (const argv of [
      ['status', '-1'],
      ['status', '-12', '--json'],
      ['retry', '-1', '--reason', 'customer asked'],
      ['resolve', '-5', '--as', 'sent', '--reason', 'checked'],
    ]) {
      const error = usageErrorOf(argv);
      expect({ argv, message: error.message }).toEqual({
        argv,
        message: expect.stringMatching(/invalid order id/i) as unknown,
      });
      expect(error.message).not.toMatch(/unknown option/i);
    }
  });

  it('an option value that looks negative stays the option value', () => {
    expect(usageErrorOf(['list', '--state', 'failed', '--limit', '-5']).message).toMatch(/--limit/);
  });

  it('a real unknown option is still named', () => {
    expect(usageErrorOf(['status', '12', '--bogus']).message).toMatch(/Unknown option '--bogus'/);
  });

  it('--operator is refused: who acts is the database login, not a name typed', () => {
    for (const argv of [
      ['retry', '42', '--reason', 'r', '--operator', 'bob'],
      ['resolve', '42', '--as', 'sent', '--reason', 'r', '--operator', 'bob'],
      ['provider', 'pin', 'postmark', '--operator', 'bob'],
    ]) {
      expect(usageErrorOf(argv).message).toMatch(/--operator is no longer taken.*OPS_DATABASE_URL/);
    }
  });

  it('parses a good status command', () => {
    expect(parseOpsCommand(['status', '42', '--json'])).toEqual({
      name: 'status',
      orderId: '42',
      json: true,
    });
  });
});

describe('parseOpsCommand: bulk', () => {
  const now = new Date('2026-12-06T12:00:00Z');

  it('a dry run takes the filter with absolute times; a range from --since ends at the dry run', () => {
    expect(
      parseOpsCommand(
        [
          'bulk',
          'resolve',
          '--as',
          'failed',
          '--state',
          'sent',
          '--since',
          '1h',
          '--template',
          'shop@3f9a1c',
          '--reason',
          'wrong price',
          '--max',
          '400',
          '--dry-run',
        ],
        now,
      ),
    ).toEqual({
      name: 'bulk',
      json: false,
      bulk: {
        act: 'dry-run',
        verb: { verb: 'resolve', as: 'failed' },
        filter: {
          state: 'sent',
          outcome: null,
          since: '2026-12-06T11:00:00.000Z',
          until: '2026-12-06T12:00:00.000Z',
          provider: null,
          template: 'shop',
          templateSha256: '3f9a1c',
        },
        reason: 'wrong price',
        max: 400,
      },
    });
    expect(parseOpsCommand(['bulk', 'run', '17'], now)).toEqual({
      name: 'bulk',
      json: false,
      bulk: { act: 'run', id: '17' },
    });
  });

  it('refuses a one-step act, an empty filter, a run with a filter and a bad bound', () => {
    expect(usageErrorOf(['bulk', 'retry', '--state', 'failed', '--reason', 'x']).message).toMatch(
      /--dry-run/,
    );
    expect(usageErrorOf(['bulk', 'retry', '--reason', 'x', '--dry-run']).message).toMatch(/at least one/);
    expect(usageErrorOf(['bulk', 'run', '17', '--state', 'failed']).message).toMatch(/only the id/);
    expect(
      usageErrorOf(['bulk', 'retry', '--state', 'failed', '--reason', 'x', '--max', '0', '--dry-run'])
        .message,
    ).toMatch(/--max/);
    expect(
      usageErrorOf(['bulk', 'resolve', '--state', 'failed', '--reason', 'x', '--dry-run']).message,
    ).toMatch(/--as/);
    expect(
      usageErrorOf(['bulk', 'retry', '--state', 'unknown', '--reason', 'x', '--dry-run']).message,
    ).toMatch(/--state/);
  });
});
