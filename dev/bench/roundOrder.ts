/** The variants of one round: as listed in odd rounds, reversed in even ones. */
export function inRoundOrder<T>(variants: readonly T[], round: number): readonly T[] {
  return round % 2 === 0 ? [...variants].reverse() : variants;
}
