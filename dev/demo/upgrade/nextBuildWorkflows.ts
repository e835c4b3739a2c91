// Build N+1 of the upgrade chaos run (`npm run chaos -- --upgrade-at S`): the mail workflow with one more
// command before everything else, a timer, so N's histories do not replay on it (test/demo/upgradeBuild.test.ts
// shows that), with no patch for them. It can only run pinned: every run stays on the build that started it.
import { sleep } from '@temporalio/workflow';
import { orderConfirmationMail as buildN } from '../../../src/workflows/orderConfirmationMail';

export { reconcileOrderMails } from '../../../src/workflows/reconcileOrderMails';

export async function orderConfirmationMail(orderId: string): ReturnType<typeof buildN> {
  await sleep(1);
  return buildN(orderId);
}
