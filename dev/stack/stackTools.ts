// Where the stack's binaries are: the folders scripts/setup.sh (--stack) installs into, one per tool and
// version (the Temporal server and the UI server are both built as `server`, so they cannot share one).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findTemporalCli } from '../devtools/findTemporalCli';
import { isExecutableFile, stackToolsDirectory } from '../devtools/toolFolders';
import { PROJECT_ROOT, type StackSettings } from './stackSettings';

export interface StackTools {
  temporalServer: string;
  sqlTool: string;
  /** schema/postgresql/v12 of the server's version: temporal/ and visibility/ with their versioned/ folders. */
  schemaDirectory: string;
  uiServer: string;
  /** The `temporal` CLI, for `temporal operator namespace create` as the compose file's job runs it. */
  temporalCli: string;
  /** The pinned Node (NODE_VERSION, the worker image's) that the workers run on, whatever runs the stack. */
  node: string;
}

/** The installed tools, or the list of what is missing. */
export function findStackTools(
  settings: StackSettings,
  env: NodeJS.ProcessEnv = process.env,
): { tools: StackTools } | { missing: string[] } {
  const directory = stackToolsDirectory(env);
  const serverFolder = path.join(directory, `temporal-server-${settings.temporalServerVersion}`);
  const sqlFolder = path.join(directory, `temporal-sql-tool-${settings.temporalServerVersion}`);
  const uiFolder = path.join(directory, `temporal-ui-server-${settings.temporalUiVersion}`);
  const nodeFolder = path.join(directory, `node-${settings.nodeVersion}`);
  const candidate = {
    temporalServer: path.join(serverFolder, 'server'),
    sqlTool: path.join(sqlFolder, 'sql'),
    schemaDirectory: path.join(sqlFolder, 'schema', 'postgresql', 'v12'),
    uiServer: path.join(uiFolder, 'server'),
    temporalCli: findTemporalCli(env) ?? '',
    node: path.join(nodeFolder, 'bin', 'node'),
  };
  const missing = [
    ...(isExecutableFile(candidate.temporalServer) ? [] : [candidate.temporalServer]),
    ...(isExecutableFile(candidate.sqlTool) ? [] : [candidate.sqlTool]),
    ...(existsSync(path.join(candidate.schemaDirectory, 'temporal', 'versioned'))
      ? []
      : [candidate.schemaDirectory]),
    ...(isExecutableFile(candidate.uiServer) ? [] : [candidate.uiServer]),
    ...(candidate.temporalCli === '' ? ['the temporal CLI'] : []),
    ...(isExecutableFile(candidate.node) ? [] : [candidate.node]),
  ];
  return missing.length > 0 ? { missing } : { tools: candidate };
}

/**
 * The tools, installed first by `scripts/setup.sh --stack` when any is missing (a cold build takes minutes:
 * it compiles the server and the UI server from the Go module proxy).
 */
export async function ensureStackTools(
  settings: StackSettings,
  options: { env?: NodeJS.ProcessEnv; log?: (line: string) => void } = {},
): Promise<StackTools> {
  const env = options.env ?? process.env;
  const found = findStackTools(settings, env);
  if ('tools' in found) return found.tools;
  options.log?.(
    `Installing the stack's tools (missing: ${found.missing.join(', ')}); this can take minutes.`,
  );
  try {
    await promisify(execFile)('bash', [path.join(PROJECT_ROOT, 'scripts', 'setup.sh'), '--stack'], {
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string; message?: string };
    throw new Error(
      `scripts/setup.sh --stack failed: ${output.message ?? String(error)}\n${output.stdout ?? ''}${output.stderr ?? ''}`,
      { cause: error },
    );
  }
  const after = findStackTools(settings, env);
  if ('tools' in after) return after.tools;
  throw new Error(`scripts/setup.sh --stack finished, but still missing: ${after.missing.join(', ')}`);
}

/** promtool from PATH, else where `scripts/setup.sh --deploy-checks` unpacked it; null when neither. */
export function findPromtool(env: NodeJS.ProcessEnv = process.env): string | null {
  for (const directory of (env.PATH ?? '').split(path.delimiter)) {
    if (directory !== '' && isExecutableFile(path.join(directory, 'promtool'))) {
      return path.join(directory, 'promtool');
    }
  }
  const unpacked = path.join(stackToolsDirectory(env), 'promtool', 'promtool');
  return isExecutableFile(unpacked) ? unpacked : null;
}

/** kubecheck as `scripts/setup.sh --deploy-checks` builds it: in a folder named after its sources' hash. */
export function findKubecheck(env: NodeJS.ProcessEnv = process.env): string | null {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) {
    hash.update(readFileSync(path.join(PROJECT_ROOT, 'dev', 'kubecheck', file)));
  }
  const binary = path.join(
    stackToolsDirectory(env),
    `kubecheck-${hash.digest('hex').slice(0, 16)}`,
    'kubecheck',
  );
  return isExecutableFile(binary) ? binary : null;
}
