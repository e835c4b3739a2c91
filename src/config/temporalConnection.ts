// Where Temporal is and how to reach it, read the way every Temporal SDK and the CLI read it
// (@temporalio/envconfig): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*,
// TEMPORAL_GRPC_META_*, and a TOML profile (TEMPORAL_PROFILE in TEMPORAL_CONFIG_FILE, default
// ~/.config/temporalio/temporal.toml) underneath them. So the dev server, the native stack, a self-hosted
// cluster and Temporal Cloud differ by environment alone. Used by the worker, the client library, the CLIs,
// the stack and the test harness.
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
  /** Address, namespace and kind of authentication, for logs; never a secret. */
  description: string;
  /** Where the address came from, for connection errors: TEMPORAL_ADDRESS, a profile, or the default. */
  addressSetting: string;
}

export class TemporalConnectionConfigError extends Error {
  override readonly name = 'TemporalConnectionConfigError';
  readonly code = 'ERR_TEMPORAL_CONNECTION_CONFIG';
}

/**
 * Reads the connection from `env` (and the TOML profile file it names). Certificate and key files are read
 * here, so a wrong path is reported at start-up rather than at the first connection attempt.
 * Throws TemporalConnectionConfigError.
 */
export function loadTemporalConnectionConfig(
  env: Record<string, string | undefined>,
): TemporalConnectionConfig {
  // An empty variable (`TEMPORAL_ADDRESS=` in a copied .env) means "not set", as in the rest of the config;
  // envconfig would take it as an empty address.
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
