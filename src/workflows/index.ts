// The workflows this worker registers. Only deterministic code may be reachable from here.
export { orderConfirmationMail } from './orderConfirmationMail';
export { reconcileOrderMails } from './reconcileOrderMails';
