/**
 * The one argument parser of every `meshhub …` command (hub/cli.ts, src/auth, src/billing,
 * src/messaging, sync/site, sync/upstream): node:util's parseArgs wrapped once, so each command
 * and subcommand answers `--help`/`-h` with its own usage (exit 0, nothing started), and a wrong
 * flag, subcommand or missing value gives one plain line naming the valid ones (exit 2), never a
 * stack. Old spellings stay accepted with a one-line "deprecated, use X" on stderr.
 */
import { parseArgs } from 'node:util';

/** A mistake in the command line (exit 2), or a refusal (exit 1): one line for stderr. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** `--help` was asked for: `text` goes to stdout and the command exits 0 having done nothing. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
  constructor(readonly text: string) {
    super('help requested');
  }
}

export interface CliOption {
  type: 'string' | 'boolean';
  multiple?: boolean;
  /** Still accepted; using it prints `<command>: --<name> is deprecated, use <deprecated>`. */
  deprecated?: string;
}

export interface CliCommand<O extends Record<string, CliOption> = Record<string, CliOption>> {
  /** The command's words, e.g. `meshhub user add`. */
  name: string;
  /** The synopsis and what it does, indented as in `meshhub --help`; `--help` prints it. */
  help: string;
  options?: O;
  /** Whether it takes arguments besides options (default true). */
  positionals?: boolean;
}

/** Options that each take a string value, by name. */
export function stringOptions<K extends string>(...names: K[]): Record<K, { type: 'string' }> {
  return Object.fromEntries(names.map((name) => [name, { type: 'string' }])) as Record<K, { type: 'string' }>;
}

type ValueOf<T extends CliOption> = T['type'] extends 'boolean'
  ? T['multiple'] extends true
    ? boolean[]
    : boolean
  : T['multiple'] extends true
    ? string[]
    : string;

export type CliValues<O extends Record<string, CliOption>> = { [K in keyof O]?: ValueOf<O[K]> };

const HELP_FLAGS = new Set(['--help', '-h']);

/** `--help` or `-h` anywhere before a `--`. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (HELP_FLAGS.has(arg)) return true;
  }
  return false;
}

/** `Usage:` and the command's own help, as `--help` prints it. */
export function usageText(help: string): string {
  return `Usage:\n${help.endsWith('\n') ? help : `${help}\n`}`;
}

function flagList<O extends Record<string, CliOption>>(command: CliCommand<O>): string {
  const flags = Object.entries(command.options ?? {})
    .filter(([, o]) => o.deprecated === undefined)
    .map(([name]) => `--${name}`);
  return flags.length
    ? `valid options: ${[...flags, '--help'].join(', ')}`
    : 'it takes no options but --help';
}

/**
 * Parses `args` for `command`: throws HelpRequested for `--help`/`-h`, UsageError (exit 2) for
 * an unknown option, a missing value or an unexpected argument, and tells `warn` once per
 * deprecated option used.
 */
export function parseCommand<O extends Record<string, CliOption>>(
  args: readonly string[],
  command: CliCommand<O>,
  warn: (text: string) => void,
): { values: CliValues<O>; positionals: string[] } {
  if (wantsHelp(args)) throw new HelpRequested(usageText(command.help));
  const options = Object.fromEntries(
    Object.entries(command.options ?? {}).map(([name, o]) => [
      name,
      { type: o.type, ...(o.multiple ? { multiple: true } : {}) },
    ]),
  );
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...args],
      options,
      allowPositionals: command.positionals !== false,
      strict: true,
    });
  } catch (error) {
    throw usageOf(error, command);
  }
  for (const [name, o] of Object.entries(command.options ?? {})) {
    if (o.deprecated !== undefined && parsed.values[name] !== undefined) {
      warn(`${command.name}: --${name} is deprecated, use ${o.deprecated}\n`);
    }
  }
  return { values: parsed.values as CliValues<O>, positionals: parsed.positionals };
}

function usageOf<O extends Record<string, CliOption>>(error: unknown, command: CliCommand<O>): unknown {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : '';
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? '';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new UsageError(`${command.name}: unknown option ${quoted}; ${flagList(command)}`);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const flag = /--[\w-]+/.exec(message)?.[0] ?? quoted;
      const option = command.options?.[flag.replace(/^--/, '')];
      return new UsageError(
        option?.type === 'boolean'
          ? `${command.name}: ${flag} takes no value`
          : `${command.name}: ${flag} needs a value (write ${flag}=VALUE for a value that starts with -)`,
      );
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`${command.name}: unexpected argument "${quoted}"; ${flagList(command)}`);
    default:
      return error;
  }
}

export interface CliGroup<K extends string> {
  /** The group's words, e.g. `meshhub user`. */
  name: string;
  /** Every subcommand's help, as `meshhub user --help` prints it. */
  help: string;
  subcommands: readonly K[];
  /** What its words are called in messages (default "subcommand"). */
  noun?: string;
}

/**
 * The subcommand `args` start with and the arguments after it. `--help`, `-h` or `help` first
 * throws HelpRequested with the group's help; none, an option or an unknown word throws a
 * UsageError naming the subcommands.
 */
export function pickSubcommand<K extends string>(
  args: readonly string[],
  group: CliGroup<K>,
): { sub: K; rest: string[] } {
  const [first, ...rest] = args;
  const noun = group.noun ?? 'subcommand';
  if (first === undefined) {
    throw new UsageError(`${group.name}: name a ${noun}: ${group.subcommands.join(', ')} (or --help)`);
  }
  if (first === 'help' || HELP_FLAGS.has(first)) throw new HelpRequested(usageText(group.help));
  if ((group.subcommands as readonly string[]).includes(first)) return { sub: first as K, rest };
  const what = first.startsWith('-') ? `unknown option ${first}` : `unknown ${noun} "${first}"`;
  throw new UsageError(`${group.name}: ${what}; use one of: ${group.subcommands.join(', ')} (or --help)`);
}

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

/**
 * HelpRequested printed on `io.out` (0) and a UsageError on `io.err` (its exit code); anything
 * else is not the command line's fault: undefined, for the caller to report or rethrow.
 */
export function reportCliError(error: unknown, io: CliIo): number | undefined {
  if (error instanceof HelpRequested) {
    io.out(error.text);
    return 0;
  }
  if (error instanceof UsageError) {
    io.err(`${error.message}\n`);
    return error.exitCode;
  }
  return undefined;
}
