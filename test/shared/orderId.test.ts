import { describe, expect, it } from 'vitest';
import { InvalidOrderIdError, parseOrderId } from '../../src/shared/orderId';

describe('parseOrderId', () => {
  it.each([
    ['1', '1'],
    [' 42 ', '42'],
    [42, '42'],
    [9007199254740991, '9007199254740991'],
    [123n, '123'],
    ['9223372036854775807', '9223372036854775807'],
  ])('accepts %s as %s', (input, expected) => {
    expect(parseOrderId(input)).toBe(expected);
  });

  it.each([
    ['0'],
    ['-1'],
    ['+1'],
    ['01'],
    ['1.0'],
    ['1e3'],
    [''],
    ['abc'],
    ['9223372036854775808'],
    [1.5],
    [-3],
    [2 ** 53],
    [null],
    [undefined],
    [{}],
  ])('refuses %j', (input) => {
    expect(() => parseOrderId(input)).toThrow(InvalidOrderIdError);
  });
});
