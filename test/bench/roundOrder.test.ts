import { describe, expect, it } from 'vitest';
import { inRoundOrder } from '../../dev/bench/roundOrder';

describe('the bench runs the variants of a round', () => {
  const variants = ['card', 'product', 'product-nofence'];

  it('as listed in odd rounds', () => {
    expect(inRoundOrder(variants, 1)).toEqual(variants);
    expect(inRoundOrder(variants, 3)).toEqual(variants);
  });

  it('in reverse in even rounds, so each of a pair goes first as often over an even number of rounds', () => {
    expect(inRoundOrder(variants, 2)).toEqual(['product-nofence', 'product', 'card']);
    const firsts = [1, 2, 3, 4].map((round) => inRoundOrder(['card', 'product'], round)[0]);
    expect(firsts.filter((name) => name === 'card')).toHaveLength(2);
    expect(variants).toEqual(['card', 'product', 'product-nofence']);
  });
});
