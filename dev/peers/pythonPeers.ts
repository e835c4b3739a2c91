// Runs the Python peers (dev/peers/python) as real processes, through dev/peers/python/run.sh: it picks the
// interpreter of the virtual environment that `bash scripts/setup.sh --python` built for the pinned
// requirements, and says so clearly (exit 1) when setup has not built it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setupCacheDirectory } from '../devtools/toolFolders';

export const PYTHON_PEERS_DIRECTORY = path.join(__dirname, 'python');

/**
 * The interpreter of the peers' virtual environment, named as setup.sh and run.sh name it (after the hash of
 * requirements.txt); it has a pip. Throws, saying what to run, when setup has not built it.
 */
export function pythonPeersInterpreter(): string {
  const base = process.env.PYTHON_PEERS_DIR || setupCacheDirectory();
  const requirements = readFileSync(path.join(PYTHON_PEERS_DIRECTORY, 'requirements.txt'));
  const venv = path.join(
    base,
    `python-${createHash('sha256').update(requirements).digest('hex').slice(0, 16)}`,
  );
  if (!existsSync(path.join(venv, 'installed'))) {
    throw new Error(
      `${venv} is not built for dev/peers/python/requirements.txt: run bash scripts/setup.sh --python`,
    );
  }
  return path.join(venv, 'bin', 'python');
}

const OUTPUT_TAIL_CHARS = 8_000;

export interface PeerProcess {
  name: string;
  child: ChildProcess;
  /** The last few KB of what it printed, for failure messages. */
  output(): string;
  /** Every complete stdout line that is a JSON object (the peers log one object per line). */
  events(): Record<string, unknown>[];
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs?: number): Promise<number | null>;
}

/** Starts `script` (a file in dev/peers/python) with the venv's Python and `env` on top of this process's. */
export function spawnPythonPeer(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
): PeerProcess {
  // run.sh execs Python, so signals sent to the child reach the peer itself.
  const child = spawn('bash', [path.join(PYTHON_PEERS_DIRECTORY, 'run.sh'), script, ...args], {
    cwd: PYTHON_PEERS_DIRECTORY,
    // No __pycache__ in the work tree; unbuffered so a killed peer's last lines are not lost.
    env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  let partialLine = '';
  const events: Record<string, unknown>[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-OUTPUT_TAIL_CHARS);
    const lines = (partialLine + text).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) {
      const event = parseObject(line);
      if (event !== null) events.push(event);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // A spawn failure (no interpreter) emits 'error' and never 'exit'.
    child.once('error', (error) => {
      tail += `\n${error.message}`;
      resolve(null);
    });
  });
  return {
    name,
    child,
    output: () => tail,
    events: () => [...events],
    exited,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
