// A throw-away Redis server for the case study's job queue: a real redis-server on a Unix socket in a temp
// folder (no port to collide on, nothing kept on disk), and a minimal client for the few commands the tests
// send (RPUSH, LLEN, PING). scripts/setup.sh --python puts redis-server where findRedisServer looks.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isExecutableFile, stackToolsDirectory } from '../devtools/toolFolders';

const START_TIMEOUT_MS = 10_000;

export type RespValue = string | number | null | RespValue[];

export interface RedisServer {
  /** For redis-py's from_url: unix:///…/redis.sock */
  url: string;
  socketPath: string;
  command(...args: string[]): Promise<RespValue>;
  stop(): Promise<void>;
}

export class RedisReplyError extends Error {
  override readonly name = 'RedisReplyError';
}

/** $REDIS_SERVER_PATH, then PATH, then the link setup.sh makes in the tools folder. */
export function findRedisServer(env: NodeJS.ProcessEnv = process.env): string {
  const candidates = [
    env.REDIS_SERVER_PATH,
    ...(env.PATH ?? '')
      .split(path.delimiter)
      .map((dir) => (dir ? path.join(dir, 'redis-server') : undefined)),
    path.join(stackToolsDirectory(env), 'redis', 'redis-server'),
  ];
  for (const candidate of candidates) {
    if (candidate !== undefined && candidate !== '' && isExecutableFile(candidate)) return candidate;
  }
  throw new Error(
    'redis-server not found. Run `bash scripts/setup.sh --python` (npm test does it in pretest).',
  );
}

export async function startRedisServer(): Promise<RedisServer> {
  const directory = await mkdtemp(path.join(tmpdir(), 'redis-'));
  const socketPath = path.join(directory, 'redis.sock');
  const child = spawn(
    findRedisServer(),
    [
      ...['--port', '0', '--unixsocket', socketPath, '--unixsocketperm', '700'],
      ...['--save', '', '--appendonly', 'no', '--dir', directory, '--loglevel', 'warning'],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(directory, { recursive: true, force: true });
  };
  const command = (...args: string[]): Promise<RespValue> => sendCommand(socketPath, args);

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`redis-server exited (${child.exitCode}) before it listened:\n${output}`);
    }
    if ((await command('PING').catch(() => null)) === 'PONG') break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not answer PING within the start timeout:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: `unix://${socketPath}`, socketPath, command, stop };
}

/** One command on a connection of its own (a Unix socket connects in microseconds), with a deadline. */
function sendCommand(socketPath: string, args: string[], timeoutMs = 5_000): Promise<RespValue> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(
      () => socket.destroy(new Error(`redis ${args[0]}: no reply in ${timeoutMs} ms`)),
      timeoutMs,
    );
    const finish = (error: Error | null, value?: RespValue): void => {
      clearTimeout(timer);
      socket.destroy();
      if (error === null) resolve(value ?? null);
      else reject(error);
    };
    socket.on('error', (error) => finish(error));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      try {
        const parsed = parseReply(buffer, 0);
        if (parsed !== null) finish(null, parsed.value);
      } catch (error) {
        finish(error as Error);
      }
    });
    socket.write(
      `*${args.length}\r\n` + args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join(''),
    );
  });
}

/** Parses one RESP2 reply starting at `offset`; null while it is incomplete. */
function parseReply(buffer: Buffer, offset: number): { value: RespValue; end: number } | null {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd === -1) return null;
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (String.fromCharCode(buffer[offset]!)) {
    case '+':
      return { value: line, end: next };
    case '-':
      throw new RedisReplyError(line);
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return null;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let position = next;
      for (let i = 0; i < count; i += 1) {
        const item = parseReply(buffer, position);
        if (item === null) return null;
        items.push(item.value);
        position = item.end;
      }
      return { value: items, end: position };
    }
    default:
      throw new RedisReplyError(`unexpected reply type in ${JSON.stringify(line.slice(0, 40))}`);
  }
}
