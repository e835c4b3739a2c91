// Every provider the sandbox emulates. They listen side by side on one port, told apart by path, so one
// sandbox serves whichever provider a worker is configured for.

import type { ProviderEmulation } from './emulation';
import { genericEmulation } from './generic';
import { mailgunEmulation } from './mailgun';
import { postmarkEmulation } from './postmark';
import { resendEmulation } from './resend';
import { sendGridEmulation } from './sendgrid';
import { sesEmulation } from './ses';

export type { ProviderAnswer, ProviderEmulation } from './emulation';

export const PROVIDER_EMULATIONS: readonly ProviderEmulation[] = [
  genericEmulation,
  sendGridEmulation,
  postmarkEmulation,
  resendEmulation,
  mailgunEmulation,
  sesEmulation,
];

export function emulationForPath(pathname: string): ProviderEmulation | null {
  return PROVIDER_EMULATIONS.find((emulation) => emulation.servesPath(pathname)) ?? null;
}

/** The provider whose lookup (a GET) is at `pathname`, or null. */
export function lookupEmulationForPath(pathname: string): ProviderEmulation | null {
  return PROVIDER_EMULATIONS.find((emulation) => emulation.lookup?.servesPath(pathname) === true) ?? null;
}
