/**
 * One SIEM request: the batch gzip-compressed (`Content-Encoding: gzip`), signed
 * (`X-Meshhub-Signature: sha256=<hex HMAC-SHA256 of the exact request body, i.e. the gzip bytes,
 * with SIEM_WEBHOOK_SECRET>`), and for Splunk HEC authorised with `Authorization: Splunk <token>`.
 *
 * Every request passes the outbound check again where it goes out (the audit plugin's address
 * guard, through the hub's guarded client): the allowlist, and no host resolving to a private
 * address — checked on the socket, at connect time — unless SIEM_ALLOW_PRIVATE_NETWORK=true. Redirects are never followed (`redirect: "manual"`): a 3xx is
 * a configuration problem to report, and following one could lead into the LAN.
 *
 * The answer decides what the forwarder does (the issue's "4xx vs 5xx", decided here):
 * - `retry`: the network, a timeout, 408, 429, any 5xx (HEC 503 "Server is busy", 500
 *   "Internal server error") — back off with jitter and send the same batch again, for ever.
 * - `reject`: 400, 413 or 422 — the receiver refuses the *data* (HEC "Invalid data format",
 *   "No data", "Event field is required/cannot be blank", an oversized body). The forwarder
 *   halves the batch until the one refused event is found, records and skips it.
 * - `hold`: anything else (401, 403, 404, a redirect, a private address, HEC "Invalid token",
 *   "Token disabled", "Incorrect index") — every batch would fail alike: nothing is skipped; the
 *   forwarder reports it and tries again at the longest backoff until the receiver is fixed.
 */
import { createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { constants, gzip, type ZlibOptions } from 'node:zlib';
import { addressGuardedFetch } from '../microsoft/address-guard.js';
import { UpstreamError } from '../microsoft/upstream.js';
import type { SiemConfig } from './settings.js';

const gzipAsync = promisify<Buffer, ZlibOptions, Buffer>(gzip);
/** Level 3: most of level 6's ratio on JSON at about twice the speed (a Pi's CPU is the bound). */
const GZIP = { level: 3, memLevel: constants.Z_DEFAULT_MEMLEVEL };

export type SendOutcome =
  | { ok: true; status: number }
  | { ok: false; kind: 'retry' | 'reject' | 'hold'; status?: number; message: string };

/** A batch ready to go: the gzip body and its headers (signature included). */
export interface PreparedRequest {
  body: Buffer;
  headers: Record<string, string>;
}

export interface SenderOptions {
  config: SiemConfig;
  userAgent: string;
  /** Replaces the network (tests' fakes): then only the URL checks apply. */
  fetchImpl?: typeof fetch;
  /** DNS for the address guard (tests). */
  resolve?: (host: string) => Promise<string[]>;
}

/** HEC answers `{"text": "...", "code": n}`; codes 7 (index) and 1–4 (token) are configuration. */
const HEC_CONFIG_CODES = new Set([1, 2, 3, 4, 7, 10, 11, 14, 16]);

export class SiemSender {
  private readonly guarded: typeof fetch;

  constructor(private readonly options: SenderOptions) {
    this.guarded = addressGuardedFetch(options.fetchImpl, {
      allowedHosts: options.config.allowedHosts,
      allowPrivateNetwork: options.config.allowPrivateNetwork,
      setting: 'SIEM_ALLOW_PRIVATE_NETWORK',
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
  }

  /** The exact bytes sent and their signature header value (tests and receivers verify the same). */
  static sign(body: Buffer, secret: string): string {
    return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  }

  /**
   * The request for one batch body: gzip (on the libuv threadpool, off the event loop) and the
   * signature. Separate from `post` so the forwarder can prepare the next batch while one is in
   * flight.
   */
  async prepare(json: Buffer): Promise<PreparedRequest> {
    const { config } = this.options;
    const body = await gzipAsync(json, GZIP);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'user-agent': this.options.userAgent,
    };
    if (config.secret) headers['x-meshhub-signature'] = SiemSender.sign(body, config.secret.reveal());
    if (config.format === 'splunk-hec' && config.hec.token) {
      headers.authorization = `Splunk ${config.hec.token.reveal()}`;
    }
    return { body, headers };
  }

  async send(json: Buffer, signal: AbortSignal): Promise<SendOutcome> {
    return this.post(await this.prepare(json), signal);
  }

  async post({ body, headers }: PreparedRequest, signal: AbortSignal): Promise<SendOutcome> {
    const { config } = this.options;
    let res: Response;
    try {
      res = await this.guarded(config.url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.any([signal, AbortSignal.timeout(config.timeoutMs)]),
      });
    } catch (error) {
      if (error instanceof UpstreamError && error.kind === 'private_address') {
        return { ok: false, kind: 'hold', message: error.message };
      }
      const name = error instanceof Error ? error.name : '';
      const message =
        name === 'TimeoutError'
          ? `no answer within ${config.timeoutMs} ms`
          : `could not reach ${config.url.host}: ${describe(error)}`;
      return { ok: false, kind: 'retry', message };
    }
    const text = await readSome(res);
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    const detail = text ? `: ${text}` : '';
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      return {
        ok: false,
        kind: 'hold',
        status: res.status,
        message: `the receiver answered a redirect (${res.status}${location ? ` to ${hostOf(location)}` : ''}); redirects are not followed: point SIEM_WEBHOOK_URL at the final address`,
      };
    }
    if (res.status === 408 || res.status === 429 || res.status >= 500) {
      return {
        ok: false,
        kind: 'retry',
        status: res.status,
        message: `the receiver answered ${res.status}${detail}`,
      };
    }
    const hecCode = config.format === 'splunk-hec' ? hecCodeOf(text) : undefined;
    const data =
      (res.status === 400 || res.status === 413 || res.status === 422) &&
      !HEC_CONFIG_CODES.has(hecCode ?? -1);
    return {
      ok: false,
      kind: data ? 'reject' : 'hold',
      status: res.status,
      message: `the receiver answered ${res.status}${detail}`,
    };
  }
}

async function readSome(res: Response): Promise<string> {
  try {
    const text = await res.text();
    return text.replace(/\s+/g, ' ').trim().slice(0, 300);
  } catch {
    return '';
  }
}

function hecCodeOf(text: string): number | undefined {
  try {
    const parsed = JSON.parse(text) as { code?: unknown };
    return typeof parsed.code === 'number' ? parsed.code : undefined;
  } catch {
    return undefined;
  }
}

function hostOf(location: string): string {
  try {
    return new URL(location).host;
  } catch {
    return 'another address';
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code =
    cause && typeof cause === 'object' && 'code' in cause ? String((cause as { code: unknown }).code) : '';
  return code || error.message;
}
