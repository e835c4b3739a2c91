// Text that came from the order (customer and product names) shown on one line, as the reader would expect:
// line breaks and other control characters would let a product name forge lines of its own ("合計: 0円")
// in the text part, and bidirectional overrides would let it show reversed text in either part.

// C0 and C1 controls, the Unicode line and paragraph separators, and the bidi embedding, override and
// isolate controls (U+202A–U+202E, U+2066–U+2069).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE_FOR_DISPLAY = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g;

export function displayText(value: string): string {
  return value.replace(UNSAFE_FOR_DISPLAY, ' ').trim();
}
