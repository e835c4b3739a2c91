// vega-lite publishes its types only through package.json "exports", which this project's
// `moduleResolution: "node"` (CommonJS) does not read; point the bare name at its declarations.
declare module 'vega-lite' {
  export * from 'vega-lite/build/index';
}
