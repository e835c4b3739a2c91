import { defineSearchAttributeKey } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ResolvedDevServerOptions, TemporalDevServer } from './devServerTypes';
import { sdkSearchAttributeType } from './searchAttributeFlags';

/**
 * Fallback for machines without a `temporal` binary but with internet access: the SDK downloads the CLI
 * (`cached-download`) and runs the same dev server. Its start-up wait is only 5 s, so this is the slower,
 * less reliable path; `scripts/setup.sh` exists so it is rarely taken.
 */
export async function startSdkDevServer(options: ResolvedDevServerOptions): Promise<TemporalDevServer> {
  const environment = await createLocalEnvironment(options);
  return {
    address: environment.address,
    uiUrl: options.uiPort === null ? null : `http://${options.ip}:${options.uiPort}`,
    namespace: options.namespace,
    stop: () => environment.teardown(),
  };
}

async function createLocalEnvironment(options: ResolvedDevServerOptions): Promise<TestWorkflowEnvironment> {
  // Imported lazily: @temporalio/testing is a dev dependency and loads the native runtime.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  try {
    return await TestWorkflowEnvironment.createLocal({
      server: {
        ip: options.ip,
        port: options.port,
        namespace: options.namespace,
        ui: options.uiPort !== null,
        uiPort: options.uiPort ?? undefined,
        dbFilename: options.dbFilename,
        log: { format: 'pretty', level: 'warn' },
        searchAttributes: Object.entries(options.searchAttributes).map(([name, type]) =>
          defineSearchAttributeKey(name, sdkSearchAttributeType[type]),
        ),
        extraArgs: Object.entries(options.dynamicConfig).flatMap(([key, value]) => [
          '--dynamic-config-value',
          `${key}=${value}`,
        ]),
      },
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      'No temporal CLI found ($TEMPORAL_CLI_PATH, PATH, Go bin directory), and the SDK could not start one ' +
        `either: ${reason}\nInstall it with \`npm run install-tools\` (needs Go) and run again.`,
      { cause: error },
    );
  }
}
