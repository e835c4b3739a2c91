// Configuration of the operator CLI (npm run ops) and of `npm run setup`. Pure, like loadConfig: takes the
// environment and reports every problem at once. The names and defaults are the worker's (.env.example).
import { CONFIG_DEFAULTS } from './configDefaults';
import { ConfigError } from './envReader';

export interface OpsConfig {
  /**
   * OPS_DATABASE_URL: the operator's own login (a member of order_mail_operators), never the workers'
   * DATABASE_URL; every act is recorded under it. null where a command needs no database (setup).
   */
  databaseUrl: string | null;
  temporal: { address: string; namespace: string; taskQueue: string };
  /** Base URL of the Temporal Web UI, for links. */
  uiBaseUrl: string;
}

const OPS_CONFIG_DEFAULTS = { TEMPORAL_UI_URL: 'http://localhost:8233' } as const;

export function loadOpsConfig(env: Record<string, string | undefined>): OpsConfig {
  const problems: string[] = [];
  const read = (name: string): string | null => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  };
  const databaseUrl = read('OPS_DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    // The value itself may hold a password, so it is not echoed.
    problems.push('OPS_DATABASE_URL must be a postgres:// or postgresql:// URL.');
  }
  const uiBaseUrl = read('TEMPORAL_UI_URL') ?? OPS_CONFIG_DEFAULTS.TEMPORAL_UI_URL;
  if (!/^https?:\/\//.test(uiBaseUrl)) problems.push('TEMPORAL_UI_URL must be an http:// or https:// URL.');
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    databaseUrl,
    temporal: {
      address: read('TEMPORAL_ADDRESS') ?? CONFIG_DEFAULTS.TEMPORAL_ADDRESS,
      namespace: read('TEMPORAL_NAMESPACE') ?? CONFIG_DEFAULTS.TEMPORAL_NAMESPACE,
      taskQueue: read('TEMPORAL_TASK_QUEUE') ?? CONFIG_DEFAULTS.TEMPORAL_TASK_QUEUE,
    },
    uiBaseUrl,
  };
}
