// The row as a caller read it, which every transition's fence compares with; the fences themselves are in
// the statements (src/mailRow/statements.ts).
export { seenRowOf, type SeenRow } from '../mailRow/statements';
