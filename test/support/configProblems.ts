// What loadConfig refuses, as its list of problems: the config tests assert every problem at once, so they
// need the list, not the first throw.
import { ConfigError, loadConfig } from '../../src/config/loadConfig';

export function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}
