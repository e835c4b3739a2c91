import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { isExecutableFile, stackToolsDirectory } from './toolFolders';

/** The CLI scripts/setup.sh installs prebuilt: `<tools folder>/temporal-cli-<TEMPORAL_CLI_VERSION>/temporal`. */
export function pinnedTemporalCli(env: NodeJS.ProcessEnv = process.env): string {
  const setup = readFileSync(join(__dirname, '..', '..', 'scripts', 'setup.sh'), 'utf8');
  const version = /^TEMPORAL_CLI_VERSION=(\S+)$/m.exec(setup)?.[1];
  if (version === undefined) throw new Error('scripts/setup.sh names no TEMPORAL_CLI_VERSION');
  return join(stackToolsDirectory(env), `temporal-cli-${version}`, 'temporal');
}

/**
 * Finds the `temporal` CLI in the same order as `scripts/setup.sh`, so the binary that setup installed or
 * checked is the one the tests run: `$TEMPORAL_CLI_PATH`, the pinned prebuilt one, then `PATH`, then Go's
 * install directory (`go install` puts it there, and that directory is often not on `PATH`). Returns null
 * when there is none.
 */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | null {
  const candidates = [
    env.TEMPORAL_CLI_PATH,
    pinnedTemporalCli(env),
    ...(env.PATH ?? '').split(delimiter).map((dir) => (dir === '' ? undefined : join(dir, 'temporal'))),
  ];
  for (const candidate of candidates) {
    if (candidate !== undefined && candidate !== '' && isExecutableFile(candidate)) return candidate;
  }
  // Only now ask Go: spawning `go env` costs a few milliseconds that the common cases above avoid.
  for (const dir of goBinDirectories(env)) {
    const candidate = join(dir, 'temporal');
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/** Where `go install` puts binaries: `$GOBIN` if set, else the first `$GOPATH` entry's `bin`. */
function goBinDirectories(env: NodeJS.ProcessEnv): string[] {
  try {
    const [gobin = '', gopath = ''] = execFileSync('go', ['env', 'GOBIN', 'GOPATH'], {
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    }).split('\n');
    const firstGopath = gopath.split(delimiter)[0] ?? '';
    return [gobin, firstGopath === '' ? '' : join(firstGopath, 'bin')].filter((dir) => dir !== '');
  } catch {
    // No Go toolchain: fall back to Go's default GOPATH, where an earlier install may still sit.
    return env.HOME === undefined ? [] : [join(env.HOME, 'go', 'bin')];
  }
}
