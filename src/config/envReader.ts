// Reading the environment: each variable by its kind, collecting every problem instead of throwing at the first,
// and the error that lists them all.
import { loadTemporalConnectionConfig, type TemporalConnectionConfig } from './temporalConnection';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'ERR_ORDER_MAIL_CONFIG';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

/** Reads variables and collects problems instead of throwing at the first. */
export class EnvReader {
  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly problems: string[],
  ) {}

  optional(name: string): string | null {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  }

  required(name: string): string {
    const value = this.optional(name);
    if (value === null) this.problems.push(`${name} is required.`);
    return value ?? '';
  }

  url(name: string, protocols: string[]): string {
    const value = this.required(name);
    if (value === '') return value;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(`${name} must be a ${protocols.join(' or ')}// URL (got ${parsed.protocol}//…).`);
      }
    } catch {
      // The value itself may hold a password, so it is not echoed.
      this.problems.push(`${name} is not a valid URL.`);
    }
    return value;
  }

  /** Like `required`, but a problem never shows the value. */
  secret(name: string): string {
    const value = this.required(name);
    if (value !== '' && !/^[\x21-\x7e]+$/.test(value)) {
      this.problems.push(`${name} must be printable ASCII without spaces (the value is not shown).`);
    }
    return value;
  }

  optionalUrl(name: string, protocols: string[]): string | null {
    return this.optional(name) === null ? null : this.url(name, protocols);
  }

  /** `shop@example.com` or `Shop <shop@example.com>`, on one line. */
  mailbox(name: string): string | null {
    const value = this.headerText(name);
    if (value !== null && !/^(?:[^<>]*<)?[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>?$/.test(value)) {
      this.problems.push(`${name} must be an address, optionally with a name: Shop <shop@example.com>.`);
    }
    return value;
  }

  /** Text that ends up in a mail header: no line breaks or other control characters. */
  headerText(name: string): string | null {
    const value = this.optional(name);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    if (value !== null && /[\u0000-\u001f\u007f]/.test(value)) {
      this.problems.push(`${name} must not contain line breaks or other control characters.`);
    }
    return value;
  }

  nonNegativeInt(name: string, fallback: number): number {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      this.problems.push(`${name} must be an integer >= 0 (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return Number(value);
  }

  positiveInt(name: string, fallback: number): number {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!/^[0-9]+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
      this.problems.push(`${name} must be a positive integer (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return Number(value);
  }

  optionalPositiveNumber(name: string): number | null {
    const value = this.optional(name);
    if (value === null) return null;
    if (!/^[0-9]+(\.[0-9]+)?$/.test(value) || Number(value) <= 0) {
      this.problems.push(`${name} must be a positive number, e.g. 10 or 0.5 (got ${JSON.stringify(value)}).`);
      return null;
    }
    return Number(value);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return value as T;
  }

  isoInstant(name: string): Date | null {
    const value = this.optional(name);
    if (value === null) return null;
    if (!/^\d{4}-\d{2}-\d{2}T[0-9:.]+(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
      this.problems.push(
        `${name} must be an ISO instant with a time zone, e.g. 2026-12-01T00:00:00+09:00 (got ${JSON.stringify(value)}).`,
      );
      return null;
    }
    return new Date(value);
  }

  /** The Temporal connection (envconfig): address, namespace, TLS files, API key, TOML profile. */
  temporalConnection(): TemporalConnectionConfig {
    try {
      return loadTemporalConnectionConfig(this.env);
    } catch (error) {
      this.problems.push(error instanceof Error ? error.message : String(error));
      return loadTemporalConnectionConfig({});
    }
  }

  hostPort(name: string, options: { loopbackForBarePort?: boolean } = {}): string | null {
    const value = this.optional(name);
    if (value !== null && options.loopbackForBarePort === true && /^[0-9]{1,5}$/.test(value)) {
      return `127.0.0.1:${value}`;
    }
    if (value !== null && !/^[^\s:]+:[0-9]{1,5}$/.test(value)) {
      this.problems.push(
        `${name} must look like host:port, e.g. 0.0.0.0:9464 (got ${JSON.stringify(value)}).`,
      );
      return null;
    }
    return value;
  }
}
