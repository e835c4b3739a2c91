// Where an operator CLI writes: stdout for what it was asked, stderr for problems. Injected so tests can read
// what a command printed without spawning it.
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};
