/**
 * Who a connecting MQTT client is (README "MQTT access"). Like Aedes' own extension points, the
 * checks are injected functions with safe defaults — with nothing injected, nobody gets in:
 *
 * - a password that is a JWT (`eyJ….….…`) is verified by the injected TokenVerifier (the hub's
 *   issuer or a trusted identity provider); roles come from its claims, the username is ignored;
 * - any other username + password goes to the injected `checkPassword` (the hub's user store)
 *   through the hub's one login throttle (src/auth/login-throttle.ts), which HTTP logins share:
 *   an attempt it refuses costs no password check and gets CONNACK 3 (server unavailable: try
 *   again later);
 * - no username and no password is anonymous: refused unless `allowAnonymous`, then a `device`.
 *
 * A known user without any MQTT role is refused with the same CONNACK 4 as a wrong password, so
 * the answer does not tell a subscriber's right password from a wrong one; the reason
 * (`no_mqtt_role`) still reaches the log and the metrics. Failures carry the CONNACK return code
 * (3 server unavailable, 4 bad username or password, 5 not authorized: anonymous) and a reason;
 * the password itself is never logged.
 */
import { AuthError, type TokenVerifier } from '../auth/jwt-verifier.js';
import { type LoginResult, LoginThrottle } from '../auth/login-throttle.js';
import { hasMqttRole } from './acl.js';

export interface MqttIdentity {
  username: string;
  roles: readonly string[];
  via: 'password' | 'token' | 'anonymous';
}

/** The hub's user store: the user and its roles when the password is right, else undefined. */
export type CheckPassword = (
  username: string,
  password: string,
) => Promise<{ username: string; roles: string[] } | undefined>;

export type MqttAuthFailureReason =
  | 'anonymous_not_allowed'
  | 'bad_credentials'
  | 'bad_token'
  | 'no_mqtt_role'
  | 'throttled'
  | 'unavailable';

export class MqttAuthFailure extends Error {
  override readonly name = 'MqttAuthFailure';
  constructor(
    readonly reason: MqttAuthFailureReason,
    /** CONNACK return code ([MQTT-3.2.2.3]): 3 server unavailable, 4 bad username or password, 5 not authorized. */
    readonly returnCode: 3 | 4 | 5,
    message: string,
  ) {
    super(message);
  }
}

export interface MqttAuthenticatorOptions {
  checkPassword?: CheckPassword;
  tokenVerifier?: TokenVerifier;
  allowAnonymous?: boolean;
  /** The hub's login throttle (shared with HTTP logins); default: one of this authenticator's own. */
  throttle?: LoginThrottle;
}

const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export const rejectAllPasswords: CheckPassword = async () => undefined;

export class MqttAuthenticator {
  private readonly throttle: LoginThrottle;

  constructor(private readonly options: MqttAuthenticatorOptions = {}) {
    this.throttle = options.throttle ?? new LoginThrottle();
  }

  /** Resolves with the identity, or rejects with MqttAuthFailure; `address` is the client's, for the throttle. */
  async authenticate(
    username: string | undefined,
    password: Buffer | undefined,
    address = 'unknown',
  ): Promise<MqttIdentity> {
    const secret = password?.toString('utf8') ?? '';
    if (!username && !secret) {
      if (!this.options.allowAnonymous) {
        throw new MqttAuthFailure('anonymous_not_allowed', 5, 'anonymous access is off');
      }
      return { username: '(anonymous)', roles: ['device'], via: 'anonymous' };
    }
    const identity = JWT_SHAPE.test(secret)
      ? await this.fromToken(secret)
      : await this.fromPassword(username ?? '', secret, address);
    if (!hasMqttRole(identity.roles)) {
      throw new MqttAuthFailure('no_mqtt_role', 4, `${identity.username} has no MQTT role`);
    }
    return identity;
  }

  private async fromToken(token: string): Promise<MqttIdentity> {
    const verifier = this.options.tokenVerifier;
    if (!verifier) throw new MqttAuthFailure('bad_token', 4, 'token logins are not configured');
    try {
      const verified = await verifier.verify(token);
      return { username: verified.username, roles: verified.roles, via: 'token' };
    } catch (error) {
      if (error instanceof AuthError && error.reason !== 'keys_unavailable')
        throw new MqttAuthFailure('bad_token', 4, error.message);
      throw new MqttAuthFailure('unavailable', 3, 'the token could not be checked');
    }
  }

  private async fromPassword(username: string, password: string, address: string): Promise<MqttIdentity> {
    const check = this.options.checkPassword ?? rejectAllPasswords;
    let result: LoginResult<{ username: string; roles: string[] }>;
    try {
      result = await this.throttle.login(username, address, () => check(username, password));
    } catch {
      throw new MqttAuthFailure('unavailable', 3, 'the user store could not be asked');
    }
    if (result.outcome === 'throttled') {
      throw new MqttAuthFailure(
        'throttled',
        3,
        `too many failed logins (${result.by}); try again in ${result.retryAfterSeconds} s`,
      );
    }
    if (result.outcome === 'failed')
      throw new MqttAuthFailure('bad_credentials', 4, 'bad username or password');
    return { username: result.user.username, roles: result.user.roles, via: 'password' };
  }
}
