/**
 * Who a connecting MQTT client is (README "MQTT access"). Like Aedes' own extension points, the
 * checks are injected functions with safe defaults — with nothing injected, nobody gets in:
 *
 * - a password that is a JWT (`eyJ….….…`) is verified by the injected TokenVerifier (the hub's
 *   issuer or a trusted identity provider); roles come from its claims, the username is ignored;
 * - any other username + password goes to the injected `checkPassword` (the hub's user store);
 * - no username and no password is anonymous: refused unless `allowAnonymous`, then a `device`.
 *
 * A known user without any MQTT role is refused too. Failures carry the CONNACK return code
 * (4 bad username or password, 5 not authorized) and a reason for logs and metrics; the
 * password itself is never logged.
 */
import { AuthError, type TokenVerifier } from '../auth/jwt-verifier.js';
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
}

const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export const rejectAllPasswords: CheckPassword = async () => undefined;

export class MqttAuthenticator {
  constructor(private readonly options: MqttAuthenticatorOptions = {}) {}

  /** Resolves with the identity, or rejects with MqttAuthFailure. */
  async authenticate(username: string | undefined, password: Buffer | undefined): Promise<MqttIdentity> {
    const secret = password?.toString('utf8') ?? '';
    if (!username && !secret) {
      if (!this.options.allowAnonymous) {
        throw new MqttAuthFailure('anonymous_not_allowed', 5, 'anonymous access is off');
      }
      return { username: '(anonymous)', roles: ['device'], via: 'anonymous' };
    }
    const identity = JWT_SHAPE.test(secret)
      ? await this.fromToken(secret)
      : await this.fromPassword(username ?? '', secret);
    if (!hasMqttRole(identity.roles)) {
      throw new MqttAuthFailure('no_mqtt_role', 5, `${identity.username} has no MQTT role`);
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

  private async fromPassword(username: string, password: string): Promise<MqttIdentity> {
    const check = this.options.checkPassword ?? rejectAllPasswords;
    let user: Awaited<ReturnType<CheckPassword>>;
    try {
      user = await check(username, password);
    } catch {
      throw new MqttAuthFailure('unavailable', 3, 'the user store could not be asked');
    }
    if (!user) throw new MqttAuthFailure('bad_credentials', 4, 'bad username or password');
    return { username: user.username, roles: user.roles, via: 'password' };
  }
}
