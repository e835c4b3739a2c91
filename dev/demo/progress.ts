// The progress line on stderr: a bar redrawn in place on a terminal, a plain line every few seconds otherwise
// (CI logs, pipes), so a log file does not fill with carriage returns.
const BAR_WIDTH = 30;
const PLAIN_EVERY_MS = 5_000;

export interface ProgressSnapshot {
  done: number;
  total: number;
  detail: string;
}

export interface ProgressLine {
  update(snapshot: ProgressSnapshot): void;
  /** Prints a message above the bar. */
  note(message: string): void;
  finish(): void;
}

export function createProgressLine(stream: NodeJS.WriteStream = process.stderr): ProgressLine {
  const interactive = stream.isTTY === true;
  const startedAt = Date.now();
  let lastPlainAt = 0;
  let drawn = false;

  const render = ({ done, total, detail }: ProgressSnapshot): string => {
    const share = total === 0 ? 0 : Math.min(1, done / total);
    const filled = Math.round(share * BAR_WIDTH);
    const seconds = Math.round((Date.now() - startedAt) / 1000);
    return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total} ${detail} ${seconds}s`;
  };
  const clear = (): void => {
    if (interactive && drawn) stream.write('\r\x1b[2K');
    drawn = false;
  };

  return {
    update(snapshot) {
      if (interactive) {
        const text = render(snapshot);
        const columns = stream.columns ?? 120;
        stream.write(`\r\x1b[2K${text.slice(0, columns - 1)}`);
        drawn = true;
      } else if (Date.now() - lastPlainAt >= PLAIN_EVERY_MS || snapshot.done >= snapshot.total) {
        lastPlainAt = Date.now();
        stream.write(`${render(snapshot)}\n`);
      }
    },
    note(message) {
      clear();
      stream.write(`${message}\n`);
    },
    finish() {
      if (interactive && drawn) stream.write('\n');
      drawn = false;
    },
  };
}
