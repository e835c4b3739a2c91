// How the sandbox's SNS retries an HTTP/S delivery of an SES event: the delivery policy docs/providers.md gives
// the subscription (a retry every 60 s for 59 retries, linear), played as SNS plays a healthyRetryPolicy: the
// no-delay retries, then the ones at the minimum delay, the backoff phase from the minimum to the maximum, then
// the ones at the maximum. Only the linear backoff is played (the one the docs use). A 4xx answer ends the
// delivery, as it does at SNS; a 5xx, a 429 or no answer is retried until the policy ends.

export interface SnsHealthyRetryPolicy {
  minDelayTarget: number;
  maxDelayTarget: number;
  numRetries: number;
  numNoDelayRetries: number;
  numMinDelayRetries: number;
  numMaxDelayRetries: number;
  backoffFunction: 'linear';
}

export interface SnsDeliveryPolicy {
  healthyRetryPolicy: SnsHealthyRetryPolicy;
  throttlePolicy: { maxReceivesPerSecond: number };
}

/** The subscription's delivery policy as docs/providers.md gives it (test/docs checks they agree). */
export const DOCUMENTED_SNS_DELIVERY_POLICY: SnsDeliveryPolicy = {
  healthyRetryPolicy: {
    minDelayTarget: 60,
    maxDelayTarget: 60,
    numRetries: 59,
    numNoDelayRetries: 0,
    numMinDelayRetries: 0,
    numMaxDelayRetries: 0,
    backoffFunction: 'linear',
  },
  throttlePolicy: { maxReceivesPerSecond: 20 },
};

/** The same policy with another delay between retries (a short chaos profile): still 59 retries. */
export function policyRetryingEvery(seconds: number): SnsDeliveryPolicy {
  return {
    ...DOCUMENTED_SNS_DELIVERY_POLICY,
    healthyRetryPolicy: {
      ...DOCUMENTED_SNS_DELIVERY_POLICY.healthyRetryPolicy,
      minDelayTarget: seconds,
      maxDelayTarget: seconds,
    },
  };
}

/** The delay before each retry, in ms, in order: as many as the policy's numRetries. */
export function snsRetryDelaysMs(policy: SnsDeliveryPolicy): number[] {
  const p = policy.healthyRetryPolicy;
  const backoff = Math.max(
    0,
    p.numRetries - p.numNoDelayRetries - p.numMinDelayRetries - p.numMaxDelayRetries,
  );
  const delays: number[] = [];
  for (let i = 0; i < p.numNoDelayRetries; i += 1) delays.push(0);
  for (let i = 0; i < p.numMinDelayRetries; i += 1) delays.push(p.minDelayTarget);
  for (let i = 1; i <= backoff; i += 1) {
    delays.push(p.minDelayTarget + ((p.maxDelayTarget - p.minDelayTarget) * i) / backoff);
  }
  for (let i = 0; i < p.numMaxDelayRetries; i += 1) delays.push(p.maxDelayTarget);
  return delays.slice(0, p.numRetries).map((seconds) => Math.round(seconds * 1000));
}
