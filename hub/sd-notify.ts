/**
 * Telling systemd the truth (issue 17): `READY=1` once every required actor runs, `STOPPING=1`
 * on the way down, and `WATCHDOG=1` only while the hub answers — the event loop turns (the
 * timer fires at all) and the health check passes (the store answers a query, every required
 * actor runs). A hub that hangs stops feeding the watchdog and systemd restarts it
 * (`WatchdogSec=` in systemd/meshhub.service).
 *
 * sd_notify is a datagram to the unix socket in $NOTIFY_SOCKET, which Node's core cannot send
 * (node:dgram has no unix datagrams). So each message is sent by `systemd-notify`, which ships
 * with systemd. It runs as a child of the hub, so the unit says `NotifyAccess=all`; it passes
 * `--pid` (the hub is the main process) and, by default, waits until systemd has processed the
 * message (its barrier), so systemd still finds the sender in the service's cgroup. Without
 * $NOTIFY_SOCKET (not under systemd, or `Type=simple`) nothing is sent and nothing is spawned.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { Hub } from './main.js';

/** Sends one notification (lines such as `READY=1`); resolves when it was handed over. */
export type NotifySend = (lines: readonly string[]) => Promise<void>;

export interface SystemdNotifierOptions {
  env?: Readonly<Record<string, string | undefined>>;
  /** How a message goes out; default: `systemd-notify --pid=<our pid> <lines…>`. */
  send?: NotifySend;
  /** Is the hub answering? Checked before every watchdog ping; no ping when false or throwing. */
  healthy: () => boolean;
  /** Why a ping was held back or a message failed (logged; never fatal). */
  onProblem?: (problem: string, error?: unknown) => void;
  pid?: number;
}

/** How long one `systemd-notify` may take before it is killed (and counted as failed). */
const SEND_TIMEOUT_MS = 5_000;

export function systemdNotifySend(
  pid: number = process.pid,
  options: { command?: string; env?: NodeJS.ProcessEnv; block?: boolean } = {},
): NotifySend {
  const { command = 'systemd-notify', env = process.env, block = true } = options;
  // block (the default): systemd-notify waits until systemd has read the message (its barrier),
  // so systemd still finds it in the service's cgroup; --no-block only where nobody checks.
  const flags = block ? [`--pid=${pid}`] : [`--pid=${pid}`, '--no-block'];
  return (lines) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(command, [...flags, ...lines], { stdio: 'ignore', env });
      const timer = setTimeout(() => child.kill('SIGKILL'), SEND_TIMEOUT_MS);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`${command} ${lines.join(' ')} exited with ${code ?? signal}`));
      });
    });
}

/**
 * Tells systemd, synchronously, to wait `seconds` more for the start, with a STATUS line: for a
 * long migration, which runs before the event loop is free (src/store/migrations.ts reports every
 * few seconds). A migration that stops moving stops extending, and the unit's start timeout
 * applies again. Nothing without $NOTIFY_SOCKET; a failure is ignored (the start goes on).
 */
export function extendStartTimeout(
  seconds: number,
  status: string,
  options: { env?: NodeJS.ProcessEnv; pid?: number; block?: boolean } = {},
): void {
  const { env = process.env, pid = process.pid, block = true } = options;
  if (!env.NOTIFY_SOCKET) return;
  spawnSync(
    'systemd-notify',
    [
      `--pid=${pid}`,
      ...(block ? [] : ['--no-block']),
      `EXTEND_TIMEOUT_USEC=${Math.round(seconds * 1e6)}`,
      `STATUS=${status}`,
    ],
    { stdio: 'ignore', env, timeout: SEND_TIMEOUT_MS },
  );
}

export class SystemdNotifier {
  private readonly send: NotifySend;
  private readonly pid: number;
  private readonly socket: string | undefined;
  private readonly watchdogUsec: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** A ping still on its way: the next tick does not pile another one on. */
  private inFlight = false;
  private stopped = false;

  constructor(private readonly options: SystemdNotifierOptions) {
    const env = options.env ?? process.env;
    this.pid = options.pid ?? process.pid;
    this.socket = env.NOTIFY_SOCKET || undefined;
    this.send = options.send ?? systemdNotifySend(this.pid);
    const usec = Number(env.WATCHDOG_USEC);
    const forPid = env.WATCHDOG_PID === undefined || Number(env.WATCHDOG_PID) === this.pid;
    this.watchdogUsec = this.socket && forPid && Number.isFinite(usec) && usec > 0 ? usec : undefined;
  }

  /** Whether systemd listens at all ($NOTIFY_SOCKET set). */
  get enabled(): boolean {
    return this.socket !== undefined;
  }

  /** The watchdog ping period in ms (half of WATCHDOG_USEC), when systemd asked for one. */
  get watchdogIntervalMs(): number | undefined {
    return this.watchdogUsec === undefined ? undefined : Math.max(1, Math.floor(this.watchdogUsec / 2_000));
  }

  /** Every required actor runs: say READY=1, then keep the watchdog fed while the hub is healthy. */
  async ready(status = 'running'): Promise<void> {
    if (!this.enabled || this.stopped) return;
    await this.message(['READY=1', `STATUS=${status}`]);
    const every = this.watchdogIntervalMs;
    if (every !== undefined && !this.timer) {
      this.timer = setInterval(() => this.tick(), every);
      this.timer.unref();
    }
  }

  /** The hub is going down: no more pings, and systemd is told so. */
  async stopping(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.enabled) await this.message(['STOPPING=1']);
  }

  /** One watchdog period: ping only when the health check passes. */
  tick(): void {
    if (this.stopped || this.inFlight) return;
    let healthy = false;
    try {
      healthy = this.options.healthy();
    } catch (error) {
      this.options.onProblem?.('the health check threw; the watchdog is not fed', error);
      return;
    }
    if (!healthy) {
      this.options.onProblem?.('the hub is not healthy; the watchdog is not fed');
      return;
    }
    this.inFlight = true;
    void this.message(['WATCHDOG=1']).finally(() => {
      this.inFlight = false;
    });
  }

  private async message(lines: string[]): Promise<void> {
    try {
      await this.send(lines);
    } catch (error) {
      this.options.onProblem?.(`telling systemd ${lines[0]} failed`, error);
    }
  }
}

/** The watchdog's health check: the store answers a query and every required actor runs. */
export function hubAnswers(hub: Pick<Hub, 'store' | 'supervisor'>): boolean {
  if (!hub.store.db.open) return false;
  if (hub.store.db.prepare('SELECT 1').pluck().get() !== 1) return false;
  return hub.supervisor.status().every((a) => !a.required || a.state === 'running');
}
