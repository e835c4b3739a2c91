// Configuration of `npm run ops` and `npm run setup`; pure, every problem at once, like loadConfig.
import { CONFIG_DEFAULTS } from './configDefaults';
import { ConfigError } from './envReader';

export interface OpsConfig {
  /** The operator's own login, never the workers': every act is recorded under it. */
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
