// The dev server's options and handle, shared by the CLI launcher (devServer.ts) and the SDK fallback
// (sdkDevServer.ts), so that neither imports the other back.
import type { SearchAttributeDefinitions } from './searchAttributeFlags';

export interface TemporalDevServerOptions {
  port?: number;
  /** A port for the Web UI; null runs headless. Default: a free port. */
  uiPort?: number | null;
  /** SQLite file that keeps state across restarts; in memory when unset. */
  dbFilename?: string;
  /** `--sqlite-pragma name=value` for the db file, e.g. { journal_mode: 'wal', synchronous: 'off' }. */
  sqlitePragmas?: Record<string, string>;
  searchAttributes?: SearchAttributeDefinitions;
  /**
   * `--dynamic-config-value KEY=JSON_VALUE` pairs, after the CLI's own defaults, e.g.
   * { 'system.forceSearchAttributesCacheRefreshOnRead': 'false' } for a server that caches as production does.
   */
  dynamicConfig?: Record<string, string>;
  namespace?: string;
}

export interface TemporalDevServer {
  address: string;
  uiUrl: string | null;
  namespace: string;
  stop(): Promise<void>;
  /** Same ports and database file; in-memory state is lost. Absent on the SDK-download fallback. */
  restart?(): Promise<void>;
}

export interface ResolvedDevServerOptions {
  ip: string;
  port: number;
  uiPort: number | null;
  dbFilename: string | undefined;
  sqlitePragmas: Record<string, string>;
  searchAttributes: SearchAttributeDefinitions;
  dynamicConfig: Record<string, string>;
  namespace: string;
}
