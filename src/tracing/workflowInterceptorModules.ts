// Every workflow bundle is built with these. No extension: webpack finds .ts in src/ and .js in dist/.
import path from 'node:path';

export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [path.join(__dirname, 'workflowInterceptors')];
