import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { StartupFailure } from '../kernel/startup-failure.js';

/**
 * Settings the process cannot start with, every one by name: one problem is the message itself
 * (one line), more are listed one per line under "invalid configuration:".
 */
export class ConfigError extends StartupFailure {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(
      problems.length === 1
        ? problems[0]!
        : `invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
}

/** A module whose settings slice is read beside the hub's (a plugin). */
export interface SettingsSlice {
  name: string;
  settings: z.ZodObject<z.ZodRawShape>;
}

/**
 * Setting names a slice reads beyond its schema's keys (names built from another setting's
 * value, like the audit plugin's `AUDIT_<TENANT>_CLIENT_ID`): registered with the schema, they
 * reach its refinements, which must check them (the schema has to be `.loose()` to keep them).
 */
const dynamicNames = new WeakMap<object, RegExp>();

export function readsSettingsMatching<S extends z.ZodObject<z.ZodRawShape>>(schema: S, names: RegExp): S {
  dynamicNames.set(schema, names);
  return schema;
}

/** The schema's keys and the given names that match its registered pattern. */
export function sliceKeys(schema: z.ZodObject<z.ZodRawShape>, present: Iterable<string>): string[] {
  const keys = Object.keys(schema.shape);
  const pattern = dynamicNames.get(schema);
  if (!pattern) return keys;
  const known = new Set(keys);
  for (const key of present) if (!known.has(key) && pattern.test(key)) keys.push(key);
  return keys;
}

export interface LoadedSettings<C> {
  config: C;
  /** Each slice's parsed settings, by module name. */
  slices: Map<string, unknown>;
}

/**
 * Builds the config from the environment and, when `CONFIG_FILE` is set, a JSON file of the
 * same keys: the application's own settings (`core`, a strict schema: the hub's is hub/settings.ts)
 * and each given slice's (the enabled plugins'), every invalid one reported at once. Unknown keys in the file are errors (a typo
 * should not be silently ignored); unknown environment variables are not (the environment holds
 * much else). Empty values count as unset.
 */
export function loadSettings<S extends z.ZodObject<z.ZodRawShape>>(
  env: NodeJS.ProcessEnv,
  core: S,
  slices: readonly SettingsSlice[],
): LoadedSettings<z.output<S>> {
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
  const inputFor = (keys: readonly string[]) => {
    const input: Record<string, unknown> = {};
    for (const key of keys) {
      const value = env[key] ?? fromFile[key];
      if (value !== undefined && value !== '' && !(typeof value === 'string' && value.trim() === ''))
        input[key] = value;
    }
    return input;
  };

  const present = [...Object.keys(env), ...Object.keys(fromFile)];
  const readBySlices = new Set(slices.flatMap((slice) => sliceKeys(slice.settings, present)));
  const coreInput = inputFor(Object.keys(core.shape));
  // Keys of the file that no slice reads go to the hub's strict schema, which names them.
  for (const key of Object.keys(fromFile)) {
    if (!readBySlices.has(key) && !(key in coreInput)) coreInput[key] = fromFile[key];
  }
  const result = core.safeParse(coreInput);
  if (!result.success) problems.push(...settingsProblems(result.error, coreInput, core));

  const parsedSlices = parseSlices(slices, inputFor, problems, present);
  if (problems.length) throw new ConfigError(problems);
  return { config: result.data!, slices: parsedSlices };
}

/** Only the given slices, from the environment alone (a hub built in a test or a bench). */
export function loadSlices(
  env: Readonly<Record<string, string | undefined>>,
  slices: readonly SettingsSlice[],
): Map<string, unknown> {
  const problems: string[] = [];
  const inputFor = (keys: readonly string[]) => {
    const input: Record<string, unknown> = {};
    for (const key of keys) {
      const value = env[key];
      if (value !== undefined && value.trim() !== '') input[key] = value;
    }
    return input;
  };
  const parsed = parseSlices(slices, inputFor, problems, Object.keys(env));
  if (problems.length) throw new ConfigError(problems);
  return parsed;
}

function parseSlices(
  slices: readonly SettingsSlice[],
  inputFor: (keys: readonly string[]) => Record<string, unknown>,
  problems: string[],
  present: readonly string[],
): Map<string, unknown> {
  const parsed = new Map<string, unknown>();
  for (const slice of slices) {
    const input = inputFor(sliceKeys(slice.settings, present));
    const result = slice.settings.safeParse(input);
    if (result.success) parsed.set(slice.name, result.data);
    else problems.push(...settingsProblems(result.error, input, slice.settings));
  }
  return parsed;
}

/** A secret's value is never echoed back, not even in an error. */
const SECRET_NAME = /SECRET|PASSWORD|API_KEY|TOKEN(?!_TTL)|WEBHOOK_URL/;

/** A missing setting's hint, from its schema's own message for an empty value (`required: …`). */
function requiredHint(schema: z.ZodObject<z.ZodRawShape> | undefined, name: string): string {
  const field = schema?.shape[name] as z.ZodType | undefined;
  const probe = field?.safeParse('');
  const message = probe && !probe.success ? probe.error.issues[0]?.message : undefined;
  const hint = message && /^required:\s*(.+)$/.exec(message)?.[1];
  return hint ? `is required: set it to ${hint}` : 'is required';
}

/** What zod says of a setting left unset (a too-short secret, hidden from `input`, is not one). */
const UNSET_CODES = new Set(['invalid_type', 'invalid_union', 'invalid_value']);

/** How zod's own messages begin (a schema's own message is kept). */
const ZOD_WORDING = /^(Invalid|Too (small|big))/;

/** zod's own messages ("expected number, received NaN") in words a person setting a value reads. */
function inWords(issue: z.core.$ZodIssue): string {
  // Our own messages (fields.ts, the parse functions) already say it in words.
  if (!ZOD_WORDING.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type':
      if (issue.expected === 'int') return 'must be a whole number';
      if (issue.expected === 'number') return 'must be a number';
      if (issue.expected === 'boolean') return 'must be true or false';
      if (issue.expected === 'string') return 'must be text';
      return `must be a ${issue.expected}`;
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      if (issue.origin === 'string')
        return small && Number(bound) <= 1
          ? 'must not be empty'
          : `must be ${small ? 'at least' : 'at most'} ${bound} characters`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return `must have ${small ? 'at least' : 'at most'} ${bound} entries`;
      return `must be ${small ? 'at least' : 'at most'} ${bound}`;
    }
    case 'invalid_union':
      return 'has a value of the wrong kind';
    case 'invalid_value':
      return `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'url'
        ? 'must be a URL like https://host/path'
        : `must be a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

/**
 * One line per invalid setting, `NAME: what is expected, in words (got "value")`, as every
 * module's settings report them; a missing required one reads `NAME: is required: set it to …`
 * when its schema says what (a `required: …` message for an empty value). `schema` is the object
 * the error came from (for that hint).
 */
export function settingsProblems(
  error: z.ZodError,
  input: Record<string, unknown>,
  schema?: z.ZodObject<z.ZodRawShape>,
): string[] {
  const problems: string[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push(`${key}: unknown setting in CONFIG_FILE`);
      continue;
    }
    const name = issue.path.join('.') || '(config)';
    const value = input[name];
    // Unset (a secret's value is left out of `input` too: only the type check tells them apart).
    if (value === undefined && issue.path.length === 1 && UNSET_CODES.has(issue.code)) {
      problems.push(`${name}: ${requiredHint(schema, name)}`);
      continue;
    }
    const shown = value === undefined || SECRET_NAME.test(name) ? '' : ` (got ${JSON.stringify(value)})`;
    problems.push(`${name}: ${inWords(issue)}${shown}`);
  }
  return problems;
}
