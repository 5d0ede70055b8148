/** The words of a listener that cannot bind (src/kernel/startup-failure.ts), for the errors a root test cannot cause. */
import { describe, expect, it } from 'vitest';
import { bindFailure, StartupFailure, startupFailureText } from '../../src/kernel/startup-failure.js';

const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });
const http = { portSetting: 'HTTP_PORT', port: 80, host: '0.0.0.0', hostSetting: 'HTTP_HOST' };

describe('bindFailure', () => {
  it('names the setting, the port and the address, and what to do', () => {
    expect((bindFailure(errno('EACCES'), http) as Error).message).toBe(
      'HTTP_PORT 80 on 0.0.0.0 needs privileges this user lacks (EACCES; ports below 1024 need root or CAP_NET_BIND_SERVICE): set HTTP_PORT to a port above 1023',
    );
    expect((bindFailure(errno('EADDRNOTAVAIL'), { ...http, host: '192.0.2.1' }) as Error).message).toBe(
      "HTTP_PORT 80 on 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL): set HTTP_HOST to one of this machine's addresses, or 0.0.0.0",
    );
    expect(bindFailure(errno('EADDRINUSE'), http)).toBeInstanceOf(StartupFailure);
  });

  it('leaves other errors alone, and a bug keeps its stack', () => {
    const other = errno('EMFILE');
    expect(bindFailure(other, http)).toBe(other);
    expect(startupFailureText(other, 'meshhub', false)).toBeUndefined();
  });

  it("prints one line, and the cause's stack only when debugging", () => {
    const failure = bindFailure(errno('EADDRINUSE'), http);
    expect(startupFailureText(failure, 'meshhub', false)).toBe(
      'meshhub: HTTP_PORT 80 on 0.0.0.0 is in use by another program: stop it or set HTTP_PORT\n',
    );
    expect(startupFailureText(failure, 'meshhub', true)).toMatch(
      /^meshhub: HTTP_PORT .*\nError: listen EADDRINUSE\n\s+at /,
    );
  });
});
