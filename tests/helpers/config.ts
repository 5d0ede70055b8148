import { ConfigError } from '../../src/config/load.js';

/**
 * The problems a settings loader reports (every one, by name), for tests of what start-up
 * refuses. Fails the test if `load` accepts the settings or throws anything but a ConfigError.
 */
export function configProblems(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}
