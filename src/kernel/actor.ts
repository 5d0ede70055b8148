/**
 * The actor base (docs/architecture.md "Actors").
 *
 * The constructor only assigns; `start()` acquires resources, `stop()` releases them (the
 * supervisor bounds it with a deadline). An actor that cannot go on calls `crash(error)` and
 * the supervisor restarts it with growing delays. A mailbox made with `createMailbox` handles
 * one message at a time, and a handler that throws crashes the actor.
 */
import { Mailbox, type OverflowPolicy } from './mailbox.js';

export type ActorState =
  | 'idle'
  | 'starting'
  | 'running'
  | 'restarting'
  | 'stopping'
  | 'stopped'
  | 'failed'
  | 'disabled';

export interface KernelLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface MailboxStats {
  actor: string;
  mailbox: string;
  depth: number;
  capacity: number;
  dropped: number;
  rejected: number;
}

export abstract class Actor {
  /** Unique within the hub; also the owner name of its bus listeners. */
  abstract readonly name: string;
  /** Names of actors that must be running before this one starts. */
  readonly dependsOn: readonly string[] = [];
  /** A required actor that cannot be kept running stops the hub; an optional one is disabled. */
  readonly required: boolean = true;
  /**
   * False for an actor whose resources others hold for the life of the process (the store's
   * connection): a crash gives up instead of restarting, and systemd restarts the process.
   */
  readonly restartable: boolean = true;

  private readonly boxes = new Map<string, Mailbox<never>>();
  private crashHandler: ((error: unknown) => void) | undefined;

  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;

  /** Extra state shown in `/health` beside the supervisor's view (e.g. the radio link state). */
  describe(): Record<string, unknown> {
    return {};
  }

  /** False when the actor runs but cannot do its job (e.g. the radio link is down). */
  ready(): boolean {
    return true;
  }

  mailboxStats(): MailboxStats[] {
    return [...this.boxes].map(([mailbox, box]) => ({
      actor: this.name,
      mailbox,
      depth: box.depth,
      capacity: box.capacity,
      dropped: box.dropped,
      rejected: box.rejected,
    }));
  }

  /** @internal set by the supervisor */
  attachCrashHandler(handler: (error: unknown) => void): void {
    this.crashHandler = handler;
  }

  /** Tells the supervisor this actor cannot go on; it will be stopped and started again. */
  protected crash(error: unknown): void {
    if (this.crashHandler) this.crashHandler(error);
    else throw error;
  }

  protected createMailbox<T>(
    label: string,
    options: { capacity: number; overflow: OverflowPolicy; handle: (message: T) => void | Promise<void> },
  ): Mailbox<T> {
    const box = new Mailbox<T>({ ...options, onError: (error) => this.crash(error) });
    this.boxes.set(label, box as unknown as Mailbox<never>);
    return box;
  }
}
