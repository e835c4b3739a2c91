// Order text on one line: a line break could forge lines ("合計: 0円"), a bidi override reverse text.

// C0 and C1 controls, the Unicode line and paragraph separators, and the bidi embedding, override and
// isolate controls (U+202A–U+202E, U+2066–U+2069).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE_FOR_DISPLAY = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g;

export function displayText(value: string): string {
  return value.replace(UNSAFE_FOR_DISPLAY, ' ').trim();
}
