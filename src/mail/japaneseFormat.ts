// By hand, not Intl: ICU data differs between Node builds, and the bytes must not.

/** 1234567n → "1,234,567円". Amounts are BIGINT yen, so no fractions and no precision limit. */
export function formatYen(amount: bigint): string {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString();
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}円`;
}

const JST_OFFSET_MS = 9 * 60 * 60 * 1000; // Japan has had no daylight saving time since 1951.

/** An instant as Japan Standard Time: "2026年1月5日 09:03". */
export function formatJstDateTime(instant: Date): string {
  const jst = new Date(instant.getTime() + JST_OFFSET_MS);
  const pad = (value: number) => String(value).padStart(2, '0');
  return (
    `${jst.getUTCFullYear()}年${jst.getUTCMonth() + 1}月${jst.getUTCDate()}日 ` +
    `${pad(jst.getUTCHours())}:${pad(jst.getUTCMinutes())}`
  );
}
