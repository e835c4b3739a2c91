// The client starts the workflow by name (it ships without workflow code, src/shared/workflowContract.ts):
// the names it uses must be the ones the worker registers and polls.
import { expect, it } from 'vitest';
import { CONFIG_DEFAULTS } from '../../src/config/loadConfig';
import { DEFAULT_TASK_QUEUE, ORDER_MAIL_WORKFLOW_TYPE } from '../../src/shared/workflowContract';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';

it('names the workflow type the worker registers and the task queue it polls by default', () => {
  expect(ORDER_MAIL_WORKFLOW_TYPE).toBe(orderConfirmationMail.name);
  expect(DEFAULT_TASK_QUEUE).toBe(CONFIG_DEFAULTS.TEMPORAL_TASK_QUEUE);
});
