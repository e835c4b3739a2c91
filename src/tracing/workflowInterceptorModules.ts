// Every workflow bundle made with tracing on is built with these. No extension: webpack finds .ts in src/ and
// .js in dist/.
import path from 'node:path';

export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [path.join(__dirname, 'workflowInterceptors')];

/**
 * Where src/cli/bundle-workflows.ts writes the bundle without the interceptors, beside the one with them
 * (`workflow-bundle.js` → `workflow-bundle-untraced.js`): a worker with tracing off runs it, so that its
 * workflows never evaluate OpenTelemetry's modules only to drop their spans (docs/benchmarks.md).
 */
export function untracedBundlePathOf(bundlePath: string): string {
  const { dir, name, ext } = path.parse(bundlePath);
  return path.join(dir, ext === '.js' ? `${name}-untraced.js` : `${name}${ext}-untraced.js`);
}
