import { readFileSync } from 'node:fs';
import { CONFIG_KEYS, configSchema, type HubConfig } from './schema.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/**
 * Builds the config from the environment and, when `CONFIG_FILE` is set, a JSON file of the
 * same keys. Unknown keys in the file are errors (a typo should not be silently ignored);
 * unknown environment variables are not (the environment holds much else).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): HubConfig {
  const problems: string[] = [];
  let fromFile: Record<string, unknown> = {};
  const file = env.CONFIG_FILE;
  if (file) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        problems.push(`CONFIG_FILE: ${file} must hold a JSON object`);
      } else {
        fromFile = parsed as Record<string, unknown>;
      }
    } catch (error) {
      problems.push(`CONFIG_FILE: cannot read ${file}: ${(error as Error).message}`);
    }
  }

  const input: Record<string, unknown> = { ...fromFile };
  for (const key of CONFIG_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }

  const result = configSchema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) problems.push(`${key}: unknown setting in CONFIG_FILE`);
      } else {
        const name = issue.path.join('.') || '(config)';
        const value = input[name];
        problems.push(
          `${name}: ${issue.message}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`,
        );
      }
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return result.data!;
}
