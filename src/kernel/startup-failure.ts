/**
 * A start-up failure the operator fixes, not the code: a taken port, an unwritable DATA_DIR, a
 * damaged database, a second hub on the same DATA_DIR. Its message is one plain line naming the
 * setting or file and what to do; the start stops at once (the supervisor never retries it) and
 * the command prints that line alone, with no stack unless LOG_LEVEL=debug (README
 * "Configuration").
 */
export class StartupFailure extends Error {
  override readonly name: string = 'StartupFailure';
}

/** Why a listener could not bind, in words; undefined for errors that are not about binding. */
const BIND_PROBLEMS: Record<string, (what: string) => string> = {
  EADDRINUSE: (what) => `${what} is in use by another program`,
  EACCES: (what) =>
    `${what} needs privileges this user lacks (EACCES; ports below 1024 need root or CAP_NET_BIND_SERVICE)`,
  EADDRNOTAVAIL: (what) => `${what} is not an address of this machine (EADDRNOTAVAIL)`,
};

/**
 * A listener's bind error as a StartupFailure, e.g. `HTTP_PORT 8080 on 127.0.0.1 is in use by
 * another program: stop it or set HTTP_PORT`; the error itself when it is not a bind error.
 * `portSetting`/`hostSetting` name the settings that choose the port and the address.
 */
export function bindFailure(
  error: unknown,
  listener: { portSetting: string; port: number; host: string; hostSetting?: string },
): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const problem = code ? BIND_PROBLEMS[code] : undefined;
  if (!problem) return error;
  const { portSetting, port, host, hostSetting } = listener;
  const what = `${portSetting} ${port} on ${host}`;
  const fix =
    code === 'EADDRNOTAVAIL'
      ? `set ${hostSetting ?? 'the listen address'} to one of this machine's addresses, or 0.0.0.0`
      : code === 'EADDRINUSE'
        ? `stop it or set ${portSetting}`
        : `set ${portSetting} to a port above 1023`;
  return new StartupFailure(`${problem(what)}: ${fix}`, { cause: error });
}

/** LOG_LEVEL=debug (or trace) in the environment: start-up failures print their stack too. */
export function debugRequested(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return ['debug', 'trace'].includes(env.LOG_LEVEL?.trim().toLowerCase() ?? '');
}

/**
 * What a command prints on stderr for a start that failed: `prefix: message` (one line for one
 * problem), and with `debug` the stack of what caused it. Undefined when the error is not a
 * StartupFailure: a bug, whose stack the command prints as it is.
 */
export function startupFailureText(error: unknown, prefix: string, debug: boolean): string | undefined {
  if (!(error instanceof StartupFailure)) return undefined;
  const line = `${prefix}: ${error.message}\n`;
  if (!debug) return line;
  const cause = error.cause instanceof Error ? error.cause : error;
  return `${line}${cause.stack ?? ''}\n`;
}
