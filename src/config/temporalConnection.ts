// Temporal's connection, read as every SDK and the CLI read it (@temporalio/envconfig), so a dev server and
// Temporal Cloud differ by environment alone (docs/production.md, "An existing cluster, or Temporal Cloud").
import type { Metadata, TLSConfig } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';

export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

/** What `Connection.connect` (client) and `NativeConnection.connect` (worker) both take. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Metadata;
}

export interface TemporalConnectionConfig {
  connectionOptions: TemporalConnectionOptions;
  namespace: string;
  /** For logs; never a secret. */
  description: string;
  addressSetting: string;
}

export class TemporalConnectionConfigError extends Error {
  override readonly name = 'TemporalConnectionConfigError';
  readonly code = 'ERR_TEMPORAL_CONNECTION_CONFIG';
}

/** Reads certificate files now, so a wrong path fails at start-up. Throws TemporalConnectionConfigError. */
export function loadTemporalConnectionConfig(
  env: Record<string, string | undefined>,
): TemporalConnectionConfig {
  // Empty means unset, as elsewhere in the config; envconfig would take an empty address.
  const overrideEnvVars = Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
    ),
  );
  let connect: ReturnType<typeof toClientOptions>;
  try {
    connect = toClientOptions(loadClientConfigProfile({ overrideEnvVars }));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TemporalConnectionConfigError(`Temporal connection settings: ${reason}`);
  }
  const { tls, apiKey, metadata } = connect.connectionOptions;
  const connectionOptions: TemporalConnectionOptions = {
    address: connect.connectionOptions.address ?? DEFAULT_TEMPORAL_ADDRESS,
    ...(tls === undefined || tls === null ? {} : { tls }),
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(metadata === undefined ? {} : { metadata }),
  };
  const namespace = connect.namespace ?? DEFAULT_TEMPORAL_NAMESPACE;
  const addressSetting =
    overrideEnvVars.TEMPORAL_ADDRESS !== undefined
      ? 'TEMPORAL_ADDRESS'
      : connect.connectionOptions.address === undefined
        ? 'TEMPORAL_ADDRESS is not set: the default'
        : 'TEMPORAL_ADDRESS is not set: the TOML profile';
  return {
    connectionOptions,
    namespace,
    description: describe(connectionOptions, namespace),
    addressSetting,
  };
}

function describe(options: TemporalConnectionOptions, namespace: string): string {
  const tls = options.tls;
  const security =
    tls === undefined || tls === false
      ? 'plaintext'
      : typeof tls === 'object' && tls.clientCertPair !== undefined
        ? 'mTLS'
        : 'TLS';
  const auth = options.apiKey === undefined ? '' : ', API key';
  return `${options.address} (namespace ${namespace}, ${security}${auth})`;
}
