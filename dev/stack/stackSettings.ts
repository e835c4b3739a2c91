// The production stack's versions and shared names, read from deploy/stack.env: the one file that
// scripts/setup.sh --stack, `npm run stack` and docker-compose.yml (checked by a test) all follow.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SearchAttributeDefinitions, SearchAttributeTypeName } from '../devtools/searchAttributeFlags';

export const PROJECT_ROOT = path.join(__dirname, '..', '..');
export const STACK_ENV_PATH = path.join(PROJECT_ROOT, 'deploy', 'stack.env');
/** Temporal's dynamic config for the stack; docker-compose.yml mounts the same file. */
export const DYNAMIC_CONFIG_PATH = path.join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamicconfig.yaml');

export interface StackSettings {
  temporalServerVersion: string;
  temporalAdminToolsVersion: string;
  temporalUiVersion: string;
  postgresqlVersion: string;
  nodeVersion: string;
  namespace: string;
  namespaceRetention: string;
  temporalDatabase: string;
  temporalVisibilityDatabase: string;
  historyShards: number;
  appDatabase: string;
  searchAttributes: SearchAttributeDefinitions;
  workerHttpPort: number;
}

export class StackSettingsError extends Error {
  override readonly name = 'StackSettingsError';
  readonly code = 'ERR_STACK_SETTINGS';
}

const SEARCH_ATTRIBUTE_TYPES: readonly SearchAttributeTypeName[] = [
  'Keyword',
  'Text',
  'Int',
  'Double',
  'Bool',
  'Datetime',
  'KeywordList',
];

/** KEY=VALUE lines as Docker Compose's env_file and bash read them: no quotes, no expansion, # comments. */
export function parseEnvFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [index, rawLine] of text.split('\n').entries()) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match === null) throw new StackSettingsError(`line ${index + 1} is not KEY=VALUE: ${line}`);
    const [, key = '', value = ''] = match;
    if (/["'$`\\]/.test(value)) {
      // Compose and bash would read such a value differently; keep the file plain so both agree.
      throw new StackSettingsError(`${key}: quotes, $, backticks and backslashes are not allowed`);
    }
    values[key] = value;
  }
  return values;
}

export function loadStackSettings(file = STACK_ENV_PATH): StackSettings {
  const values = parseEnvFile(readFileSync(file, 'utf8'));
  const problems: string[] = [];
  const text = (key: string): string => {
    const value = values[key];
    if (value === undefined || value === '') problems.push(`${key} is missing`);
    return value ?? '';
  };
  const integer = (key: string): number => {
    const value = text(key);
    if (value !== '' && !/^[1-9][0-9]*$/.test(value)) problems.push(`${key} must be a positive integer`);
    return Number(value);
  };
  const settings: StackSettings = {
    temporalServerVersion: text('TEMPORAL_SERVER_VERSION'),
    temporalAdminToolsVersion: text('TEMPORAL_ADMINTOOLS_VERSION'),
    temporalUiVersion: text('TEMPORAL_UI_VERSION'),
    postgresqlVersion: text('POSTGRESQL_VERSION'),
    nodeVersion: text('NODE_VERSION'),
    namespace: text('TEMPORAL_NAMESPACE'),
    namespaceRetention: text('TEMPORAL_NAMESPACE_RETENTION'),
    temporalDatabase: text('TEMPORAL_DB'),
    temporalVisibilityDatabase: text('TEMPORAL_VISIBILITY_DB'),
    historyShards: integer('TEMPORAL_HISTORY_SHARDS'),
    appDatabase: text('APP_DB'),
    searchAttributes: parseSearchAttributes(text('TEMPORAL_SEARCH_ATTRIBUTES'), problems),
    workerHttpPort: integer('WORKER_HTTP_PORT'),
  };
  if (problems.length > 0) throw new StackSettingsError(`${file}: ${problems.join('; ')}`);
  return settings;
}

function parseSearchAttributes(value: string, problems: string[]): SearchAttributeDefinitions {
  const definitions: SearchAttributeDefinitions = {};
  for (const entry of value.split(/\s+/).filter((part) => part !== '')) {
    const [name = '', type = ''] = entry.split('=');
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name) || !isSearchAttributeType(type)) {
      problems.push(
        `TEMPORAL_SEARCH_ATTRIBUTES: "${entry}" is not Name=Type (${SEARCH_ATTRIBUTE_TYPES.join('|')})`,
      );
      continue;
    }
    definitions[name] = type;
  }
  return definitions;
}

function isSearchAttributeType(type: string): type is SearchAttributeTypeName {
  return (SEARCH_ATTRIBUTE_TYPES as readonly string[]).includes(type);
}
