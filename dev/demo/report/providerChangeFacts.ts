// What the provider-change run did (dev/demo/providerChange.ts), as the report reads it.
export interface ProviderChangeStep {
  step:
    | 'drain-rolled'
    | 'rotation-drain-rolled'
    | 'old-key-unbound'
    | 'new-key-added'
    | 'new-key-rolled'
    | 'old-key-revoked'
    | 'rotation-done';
  atMs: number;
}

export interface ProviderChangeFacts {
  drained: string;
  rotated: string;
  oldKeyFingerprint: string;
  newKeyFingerprint: string;
  steps: ProviderChangeStep[];
  /** Worker restarts the rolls made. */
  rolledWorkers: number;
  /** What stopped the change before it was done (a worker refused to start, the wait ran out), or null. */
  stoppedBy: string | null;
  /** When the old key was revoked (ms after the first start), or null if it never was. */
  revokedAtMs: number | null;
}
