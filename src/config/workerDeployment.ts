// TEMPORAL_WORKER_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID: the Worker Deployment Version a build polls as
// (docs/production.md#upgrades). Both or neither: a worker with one of them would poll unversioned by mistake.
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { EnvReader } from './envReader';

// The server joins them as "<name>.<build id>", so the name may hold no dot.
const DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const BUILD_ID = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/;

export function readWorkerDeployment(read: EnvReader, problems: string[]): WorkerDeploymentVersion | null {
  const deploymentName = read.optional('TEMPORAL_WORKER_DEPLOYMENT_NAME');
  const buildId = read.optional('TEMPORAL_WORKER_BUILD_ID');
  if (deploymentName === null && buildId === null) return null;
  if (deploymentName === null || buildId === null) {
    problems.push(
      'TEMPORAL_WORKER_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID go together: set both for a versioned ' +
        `worker, or neither (got only ${deploymentName === null ? 'the build id' : 'the deployment name'}).`,
    );
    return null;
  }
  if (!DEPLOYMENT_NAME.test(deploymentName)) {
    problems.push(
      'TEMPORAL_WORKER_DEPLOYMENT_NAME must be 1 to 63 letters, digits, _ or -, starting with a letter or ' +
        `digit, no dot (got ${JSON.stringify(deploymentName)}).`,
    );
  }
  if (!BUILD_ID.test(buildId)) {
    problems.push(
      'TEMPORAL_WORKER_BUILD_ID must be 1 to 128 letters, digits, ., _, + or -, starting with a letter or ' +
        `digit (got ${JSON.stringify(buildId)}).`,
    );
  }
  return { deploymentName, buildId };
}
